// The npm profile's plugin: its mount mapped onto the configured registry.
import type { EcosystemPlugin } from '../define.ts';
import { serveUpstream } from '../upstream.ts';
import { npmProfile } from './profile.ts';

const plugin: EcosystemPlugin = async (api) => serveUpstream(api, '/npm', 'npm registry', npmProfile);
export default plugin;

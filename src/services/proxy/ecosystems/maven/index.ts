// The Maven profile's plugin: its mount mapped onto the configured repository.
import type { EcosystemPlugin } from '../define.ts';
import { serveUpstream } from '../upstream.ts';
import { mavenProfile } from './profile.ts';

const plugin: EcosystemPlugin = async (api) => serveUpstream(api, '/maven', 'Maven repository', mavenProfile);
export default plugin;

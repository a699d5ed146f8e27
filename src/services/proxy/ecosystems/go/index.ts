// The Go modules profile's plugin: its mount mapped onto the module proxy and checksum databases.
import type { EcosystemPlugin } from '../define.ts';
import { serveUpstream } from '../upstream.ts';
import { goProfile } from './profile.ts';

const plugin: EcosystemPlugin = async (api) => serveUpstream(api, '/go', 'Go module proxy', goProfile);
export default plugin;

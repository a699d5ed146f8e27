// The Hugging Face profile's plugin: its mount mapped onto the Hub, its storage hosts behind it.
import type { EcosystemPlugin } from '../define.ts';
import { serveUpstream } from '../upstream.ts';
import { hfProfile } from './profile.ts';

const plugin: EcosystemPlugin = async (api) => serveUpstream(api, '/hf', 'Hugging Face Hub', hfProfile);
export default plugin;

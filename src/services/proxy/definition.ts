// The Reverse proxy utility's definition (see ../define.ts), with the ecosystem profiles it can
// serve (ecosystems/index.ts; tests may give it others).
import { defineService } from '../define.ts';
import { proxySection } from './config.ts';
import type { EcosystemDef } from './ecosystems/define.ts';
import { ECOSYSTEMS } from './ecosystems/index.ts';

/** Where the proxy's routes live on the base host; its own host's paths are rewritten under it. */
export const MOUNT = '/proxy';

export function proxyDefinition(ecosystems: readonly EcosystemDef[]) {
  return defineService({
    name: 'proxy',
    config: proxySection(ecosystems.map((d) => d.name)),
    plugin: async () => ({ default: (await import('./index.ts')).proxyPlugin(ecosystems) }),
    host: { mount: MOUNT, label: 'Proxy' },
    page: async () => (await import('./page.ts')).proxyPage(ecosystems),
    dashboard: async (ctx) => (await import('./dashboard.ts')).proxyDashboard(ctx),
  });
}

export default proxyDefinition(ECOSYSTEMS);

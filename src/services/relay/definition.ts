// The Syncthing relay utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { relaySection } from './config.ts';

export default defineService({
  name: 'relay',
  config: relaySection,
  plugin: () => import('./index.ts'),
  page: async () => (await import('./page.ts')).relayPage,
  // The relay's own TLS listener; the plugin above only serves its status route.
  background: async (ctx) => (await import('./background.ts')).relayBackground.start(ctx),
  dashboard: async (ctx) => (await import('./dashboard.ts')).relayDashboard(ctx),
});

// The File storage utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { filesSection } from './config.ts';

export default defineService({
  name: 'files',
  config: filesSection,
  plugin: () => import('./index.ts'),
  page: async () => (await import('./page.ts')).filesPage,
  dashboard: async (ctx) => (await import('./dashboard.ts')).filesDashboard(ctx),
});

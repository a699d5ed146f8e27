// The Random image utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { imageSection } from './config.ts';

export default defineService({
  name: 'image',
  config: imageSection,
  plugin: () => import('./index.ts'),
  page: async () => (await import('./page.ts')).imagePage,
  dashboard: async (ctx) => (await import('./dashboard.ts')).imageDashboard(ctx),
});

// The Random image utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { imageSection } from './config.ts';
import { imageDashboard } from './dashboard.ts';
import { imagePage } from './page.ts';

export default defineService({
  name: 'image',
  config: imageSection,
  plugin: () => import('./index.ts'),
  page: imagePage,
  dashboard: imageDashboard,
});

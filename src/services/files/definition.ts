// The File storage utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { filesSection } from './config.ts';
import { filesDashboard } from './dashboard.ts';
import { filesPage } from './page.ts';

export default defineService({
  name: 'files',
  config: filesSection,
  plugin: () => import('./index.ts'),
  page: filesPage,
  dashboard: filesDashboard,
});

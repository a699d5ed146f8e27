// The Caller IP utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { ipSection } from './config.ts';

export default defineService({
  name: 'ip',
  config: ipSection,
  plugin: () => import('./index.ts'),
  page: async () => (await import('./page.ts')).ipPage,
});

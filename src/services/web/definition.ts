// The Home page utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { webSection } from './config.ts';

export default defineService({
  name: 'web',
  config: webSection,
  plugin: () => import('./index.ts'),
});

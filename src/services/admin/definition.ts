// The operator's dashboard (see ../define.ts): no home page section, no host of its own.
import { defineService } from '../define.ts';
import { adminSection } from './config.ts';

export default defineService({
  name: 'admin',
  config: adminSection,
  plugin: () => import('./index.ts'),
});

// The set-me-up utility's definition (see ../define.ts): /setup.sh and its home page section.
import { defineService } from '../define.ts';
import { setupSection } from './config.ts';

export default defineService({
  name: 'setup',
  config: setupSection,
  plugin: () => import('./index.ts'),
  page: async () => (await import('./page.ts')).setupPage,
});

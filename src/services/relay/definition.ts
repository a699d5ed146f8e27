// The Syncthing relay utility's definition (see ../define.ts).
import { relaySection } from '../../relay/config.ts';
import { defineService } from '../define.ts';
import { relayPage } from './page.ts';

export default defineService({
  name: 'relay',
  config: relaySection,
  plugin: () => import('./index.ts'),
  page: relayPage,
  // The relay's own TLS listener; the plugin above only serves its status route.
  background: async (ctx) => (await import('../../relay/index.ts')).relayBackground.start(ctx),
});

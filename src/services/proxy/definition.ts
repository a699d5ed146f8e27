// The Reverse proxy utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { proxySection } from './config.ts';
import { proxyPage } from './page.ts';

/** Where the proxy's routes live on the base host; its own host's paths are rewritten under it. */
export const MOUNT = '/proxy';

export default defineService({
  name: 'proxy',
  config: proxySection,
  plugin: () => import('./index.ts'),
  host: { mount: MOUNT, label: 'Proxy' },
  page: proxyPage,
});

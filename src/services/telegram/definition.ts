// The Message relay (Telegram Bot API) utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { telegramSection } from './config.ts';

/** Prefix of the Bot API base URL on the base host; on DEVUTIL_TELEGRAM_HOST it is the root. */
export const MOUNT = '/telegram';

export default defineService({
  name: 'telegram',
  config: telegramSection,
  plugin: () => import('./index.ts'),
  host: { mount: MOUNT, label: 'Telegram Bot API' },
  page: async () => (await import('./page.ts')).telegramPage,
});

// The Message relay (Telegram Bot API) utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { telegramSection } from './config.ts';
import { telegramPage } from './page.ts';

export default defineService({
  name: 'telegram',
  config: telegramSection,
  plugin: () => import('./index.ts'),
  page: telegramPage,
});

// Message-bot relay section.
import { bool, rate, url } from '../../infra/schema.ts';

export const telegramSection = {
  enabled: bool(true, { doc: 'serve POST /rest/api/v1/telegram' }),
  apiBase: url('https://api.telegram.org', { doc: 'Telegram Bot API base URL' }),
  rateLimit: rate('30/min', { doc: 'messages per client IP' }),
};

// Message-bot relay section: upstream, outbound timeouts/proxy, payload caps and the budgets
// (our callers per IP and per bot key, plus Telegram's own pacing per bot and per chat).
import { bool, bytes, duration, int, rate, str, url } from '../../infra/config/schema.ts';

export const telegramSection = {
  enabled: bool(true, { doc: 'serve POST /rest/api/v1/telegram' }),
  apiBase: url('https://api.telegram.org', {
    doc: 'Telegram Bot API base URL (or a self-hosted telegram-bot-api server)',
  }),
  proxyUrl: url('', {
    optional: true,
    secret: true,
    doc: 'outbound HTTP(S) proxy for reaching the Bot API, e.g. http://user:pass@proxy:3128 (empty = direct)',
  }),
  connectTimeoutMs: duration(5_000, {
    unit: 'ms',
    min: 100,
    doc: 'time to open the connection to the Bot API',
  }),
  timeoutMs: duration(30_000, {
    unit: 'ms',
    min: 100,
    doc: 'time for the Bot API to answer one call (then 504)',
  }),
  connections: int(32, { min: 1, max: 1024, doc: 'keep-alive connections kept to the Bot API host' }),
  maxResponseBytes: bytes(1024 * 1024, { min: 1024, doc: 'largest Bot API answer read (then 502)' }),
  maxBodyBytes: bytes(64 * 1024, { min: 1024, doc: 'largest request body accepted by the relay (413)' }),
  defaultText: str('devutil relay: connectivity check', {
    doc: 'text sent when msgText is absent (escaped for the parse mode)',
  }),
  honourRetryAfter: bool(true, {
    doc: "after Telegram's 429, answer 429 for that bot and chat until its retry_after has passed",
  }),
  rateLimit: rate('30/min', { doc: 'messages per client IP' }),
  keyRateLimit: rate('60/min', { doc: 'messages per bot key, whoever sends them' }),
  botRate: rate('30/s', { doc: "Telegram's pacing per bot: answer 429 early above this" }),
  groupRate: rate('20/min', {
    doc: "Telegram's pacing per bot and group (negative chat ids): at most 20 messages a minute",
  }),
  chatRate: rate('5/5s', {
    doc: "Telegram's pacing per bot and chat (~1/s, short bursts tolerated): answer 429 early above this",
  }),
};

// Message-bot relay section: upstream, outbound timeouts (its proxy is egress.proxy), payload caps and the budgets
// (our callers per IP and per bot key, plus Telegram's own pacing per bot and per chat), the
// Bot API base URL (its own host, uploads, downloads, long polls) and recipient tokens.
import { bool, bytes, duration, int, list, rate, str, url } from '../../infra/config/schema.ts';

export const telegramSection = {
  enabled: bool(true, {
    doc: 'serve POST /rest/api/v1/telegram, the Bot API base URL /telegram and recipient tokens',
  }),
  host: str('', { doc: 'Host header that routes every path to the Bot API base URL (e.g. tg.example.com)' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL of the Bot API base URL (default: http(s)://<host> or <public_url>/telegram)',
  }),
  allowedBots: list([], {
    item: (s) => (/^\d{1,20}$/.test(s) ? null : 'expected a numeric bot id (the digits before the colon)'),
    doc: 'bot ids (the digits before the colon of a key) this server relays for; empty = any bot',
  }),
  apiBase: url('https://api.telegram.org', {
    doc: 'Telegram Bot API base URL (or a self-hosted telegram-bot-api server)',
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
  upstreamCa: str('', {
    doc: 'PEM file of extra CAs trusted for the Bot API host (fixtures, a private server)',
  }),
  apiMaxBodyBytes: bytes(1024 * 1024, {
    min: 1024,
    doc: 'largest JSON, form or query body of a Bot API call through /telegram/bot<key>/ (413)',
  }),
  maxUploadBytes: bytes(50 * 1024 * 1024, {
    min: 1024,
    doc: "largest multipart Bot API call (sendDocument, sendPhoto...), streamed through (Telegram's limit: 50 MB)",
  }),
  maxFileBytes: bytes(20 * 1024 * 1024, {
    min: 1024,
    doc: "largest file download through /telegram/file/bot<key>/ (Telegram's limit: 20 MB)",
  }),
  apiRateLimit: rate('600/min', { doc: 'Bot API calls per client IP through /telegram/bot<key>/' }),
  apiQueue: int(256, {
    min: 0,
    max: 100_000,
    doc: 'Bot API calls waiting for one of the upstream connections before 503',
  }),
  clientShare: int(50, {
    min: 1,
    max: 100,
    doc: 'percent of the upstream connections and of the queue one client (IPv6: its /64) may hold',
  }),
  longPolls: int(256, {
    min: 1,
    max: 100_000,
    doc: 'getUpdates long polls held open at once, on connections of their own (503 above)',
  }),
  longPollClientShare: int(5, {
    min: 1,
    max: 100,
    doc: 'percent of the long polls one client (IPv6: its /64) may hold (429 above)',
  }),
  longPollMaxSec: duration(50, {
    unit: 's',
    min: 0,
    doc: 'longest getUpdates timeout passed on; a longer one is shortened to this',
  }),
  recipientRateLimit: rate('30/min', {
    doc: 'recipient token registrations, listings and revocations per client IP',
  }),
  maxRecipientsPerBot: int(100, { min: 1, max: 100_000, doc: 'recipient tokens one bot may have' }),
  maxRecipients: int(10_000, { min: 1, max: 10_000_000, doc: 'recipient tokens on this server (every bot)' }),
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

// Message-bot relay: POST /rest/api/v1/telegram sends through the Telegram Bot API for callers that
// cannot reach it; /telegram/ is a Bot API base URL (every method, uploads, downloads, long polls),
// the home of recipient tokens, and an ntfy and Gotify server whose tokens are recipient tokens. The bot key stays out of logs and metrics on every path.
import type { FastifyPluginAsync } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import { type LazyImpl, lazyImpl } from '../../infra/http/lazy.ts';
import { botApiRoutes } from './api-routes.ts';
import { MOUNT } from './definition.ts';
import { BOT_API_ENVELOPE } from './envelope.ts';
import { notifyRoutes } from './notify-routes.ts';
import { recipientRoutes } from './recipient-routes.ts';
import type { RelayParts } from './relay.ts';
import { telegramRoutes } from './routes.ts';

export interface TelegramMetrics {
  calls: Counter<'result'>;
  duration: Histogram<'result'>;
  refused: Counter<'reason'>;
  /** Calls through the Bot API base URL and recipient tokens, by kind (message, upload, poll, call, file, recipient, ntfy, gotify). */
  api: Counter<'kind' | 'result'>;
  apiDuration: Histogram<'kind' | 'result'>;
}

/** relay.ts's handlers and the parts built on the first request: what every route file answers with. */
export type TelegramRelay = LazyImpl<typeof import('./relay.ts') & RelayParts>;

const telegram: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/rest/api/v1/telegram', 'legacy');
  app.envelopes.mount(MOUNT, BOT_API_ENVELOPE);
  const metrics: TelegramMetrics = {
    calls: ctx.metrics.counter('devutil_telegram_upstream_calls_total', 'Bot API calls by result', [
      'result',
    ]),
    duration: ctx.metrics.histogram(
      'devutil_telegram_upstream_duration_seconds',
      'Bot API call latency',
      ['result'],
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    refused: ctx.metrics.counter(
      'devutil_telegram_refused_total',
      'relay calls refused before reaching Telegram, by reason (input, key, bot, chat, group, paused)',
      ['reason'],
    ),
    api: ctx.metrics.counter(
      'devutil_telegram_api_calls_total',
      'calls through the Bot API base URL and recipient tokens, by kind and result',
      ['kind', 'result'],
    ),
    apiDuration: ctx.metrics.histogram(
      'devutil_telegram_api_duration_seconds',
      'latency of calls through the Bot API base URL (long polls included)',
      ['kind', 'result'],
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    ),
  };
  // The metrics above exist from the start (scraped before the first message); the clients, the
  // gateway and every handler are loaded on the first request that needs them.
  const relay: TelegramRelay = lazyImpl('the Telegram relay', async () => {
    const m = await import('./relay.ts');
    return { ...m, ...m.buildRelay(ctx, metrics) };
  });
  // A load still running when the server closes is waited for, so its connection pools close too.
  app.addHook('onClose', async () => (await relay.settled())?.close());
  await telegramRoutes(app, { ctx, metrics, relay });
  // Raw bodies (uploads stream through) in a scope of their own; the recipient API reads JSON.
  await app.register(async (scope) => botApiRoutes(scope, ctx, relay));
  await app.register(async (scope) => recipientRoutes(scope, ctx, relay));
  // ntfy and Gotify publishes read any body as bytes: a scope of their own too.
  await app.register(async (scope) => notifyRoutes(scope, ctx, relay));
};

export default telegram;

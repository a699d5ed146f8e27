// Message-bot relay: POST /rest/api/v1/telegram sends through the Telegram Bot API for callers that
// cannot reach it; /telegram/ is a Bot API base URL (every method, uploads, downloads, long polls)
// and the home of recipient tokens. The bot key stays out of logs and metrics on every path.
import type { FastifyPluginAsync } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import { FairQueue } from '../../infra/limits/fair-queue.ts';
import { BotApiGateway } from './api-gateway.ts';
import { botApiRoutes } from './api-routes.ts';
import { BotApiClient } from './client.ts';
import { MOUNT } from './definition.ts';
import { BOT_API_ENVELOPE } from './envelope.ts';
import { Pacing } from './pacing.ts';
import { Pauses } from './pauses.ts';
import { recipientRoutes } from './recipient-routes.ts';
import { RecipientStore } from './recipients.ts';
import { telegramRoutes } from './routes.ts';

export interface TelegramMetrics {
  calls: Counter<'result'>;
  duration: Histogram<'result'>;
  refused: Counter<'reason'>;
  /** Calls through the Bot API base URL and recipient tokens, by kind (message, upload, poll, call, file, recipient). */
  api: Counter<'kind' | 'result'>;
  apiDuration: Histogram<'kind' | 'result'>;
}

const telegram: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.telegram;
  app.envelopes.mount('/rest/api/v1/telegram', 'legacy');
  app.envelopes.mount(MOUNT, BOT_API_ENVELOPE);
  const upstream = {
    apiBase: cfg.apiBase,
    policy: ctx.config.egress,
    connectTimeoutMs: cfg.connectTimeoutMs,
    maxResponseBytes: cfg.maxResponseBytes,
    resolve: ctx.config.egress.resolve,
    ...(cfg.upstreamCa ? { caFile: cfg.upstreamCa } : {}),
  };
  const client = new BotApiClient({ ...upstream, timeoutMs: cfg.timeoutMs, connections: cfg.connections });
  // Long polls hold their connection for up to longPollMaxSec: a pool of their own, so a bot
  // waiting for updates never holds a connection another's message needs.
  const polls = new BotApiClient({
    ...upstream,
    timeoutMs: cfg.timeoutMs + cfg.longPollMaxSec * 1000,
    connections: cfg.longPolls,
  });
  app.addHook('onClose', async () => {
    await client.close();
    await polls.close();
  });
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
  const pacing = new Pacing(ctx, metrics, new Pauses(ctx.state));
  await telegramRoutes(app, { ctx, client, metrics, pacing });

  const recipients = new RecipientStore(ctx.blobs);
  const gateway = new BotApiGateway({
    ctx,
    client,
    polls,
    metrics,
    pacing,
    recipients,
    apiQueue: new FairQueue({
      concurrency: cfg.connections,
      queueLength: cfg.apiQueue,
      clientShare: cfg.clientShare / 100,
    }),
    pollQueue: new FairQueue({
      concurrency: cfg.longPolls,
      queueLength: 0,
      clientShare: cfg.longPollClientShare / 100,
    }),
  });
  // Raw bodies (uploads stream through) in a scope of their own; the recipient API reads JSON.
  await app.register(async (scope) => botApiRoutes(scope, ctx, gateway));
  await app.register(async (scope) => recipientRoutes(scope, ctx, { gateway, client, recipients }));
};

export default telegram;

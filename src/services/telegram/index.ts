// Message-bot relay: POST /rest/api/v1/telegram sends through the Telegram Bot API for callers that
// cannot reach it, keeping the bot key out of logs and metrics.
import type { FastifyPluginAsync } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import { BotApiClient } from './client.ts';
import { Pauses } from './pauses.ts';
import { telegramRoutes } from './routes.ts';

export interface TelegramMetrics {
  calls: Counter<'result'>;
  duration: Histogram<'result'>;
  refused: Counter<'reason'>;
}

const telegram: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.telegram;
  app.envelopes.mount('/rest/api/v1/telegram', 'legacy');
  const client = new BotApiClient({
    apiBase: cfg.apiBase,
    proxyUrl: cfg.proxyUrl,
    connectTimeoutMs: cfg.connectTimeoutMs,
    timeoutMs: cfg.timeoutMs,
    connections: cfg.connections,
    maxResponseBytes: cfg.maxResponseBytes,
    resolve: ctx.config.egress.resolve,
  });
  app.addHook('onClose', async () => {
    await client.close();
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
  };
  const pauses = new Pauses(ctx.state);
  await telegramRoutes(app, { ctx, client, metrics, pauses });
};

export default telegram;

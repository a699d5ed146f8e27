// POST /rest/api/v1/telegram (docs/protocols/public-interface.md §5): the route; its handler
// (validate, charge the budgets, call sendMessage once, answer in the legacy envelope) is send.ts,
// loaded with the rest of the relay on the first request (relay.ts).
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { badRequest } from '../../infra/http/errors.ts';
import type { TelegramMetrics, TelegramRelay } from './index.ts';

// Documented in OpenAPI in full, but only "is an object" is checked by the framework: planMessage
// validates the fields itself, without Ajv's type coercion (which would turn msgText 5 into "5").
const bodySchema = {
  type: 'object',
  required: ['apiKey', 'chatId'],
  properties: {
    apiKey: { type: 'string', description: 'the bot token, <digits>:<secret>' },
    chatId: {
      type: ['string', 'integer'],
      description: 'numeric chat id (groups negative, channels -100...) or @channelname',
    },
    msgText: {
      type: ['string', 'object'],
      description:
        'the text (MarkdownV2 by default), or sendMessage parameters with text; other fields are forwarded',
    },
    parseMode: { type: 'string', enum: ['MarkdownV2', 'HTML', 'Markdown', 'none'], default: 'MarkdownV2' },
    escape: { type: 'boolean', description: 'escape a plain text for the parse mode', default: false },
    plainFallback: {
      type: 'boolean',
      description:
        "if Telegram rejects the markup (can't parse entities), send the text once more as plain text",
      default: false,
    },
  },
} as const;

const objectOnly = () => (data: unknown) =>
  typeof data === 'object' && data !== null && !Array.isArray(data)
    ? { value: data }
    : { error: badRequest('body must be a JSON object') };

export interface RouteDeps {
  ctx: ServiceContext;
  metrics: TelegramMetrics;
  relay: TelegramRelay;
}

export async function telegramRoutes(
  app: FastifyInstance,
  { ctx, metrics, relay }: RouteDeps,
): Promise<void> {
  const cfg = ctx.config.telegram;

  app.post(
    '/rest/api/v1/telegram',
    {
      bodyLimit: cfg.maxBodyBytes,
      onRequest: ctx.limiter.hook('telegram-ip', cfg.rateLimit),
      validatorCompiler: objectOnly,
      schema: { summary: 'Send a message through a Telegram bot', tags: ['telegram'], body: bodySchema },
    },
    relay.handler(
      (r) => (req, reply) => r.relaySend({ cfg, client: r.client, metrics, pacing: r.pacing }, req, reply),
    ),
  );
}

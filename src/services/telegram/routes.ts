// POST /rest/api/v1/telegram (docs/protocols/public-interface.md §5): validate, charge the budgets (client
// IP, bot key, Telegram's per-bot and per-chat pacing: pacing.ts), call sendMessage once, answer in the
// legacy envelope.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { alreadyLogged, badRequest, forbidden } from '../../infra/http/errors.ts';
import type { BotApiClient } from './client.ts';
import type { TelegramMetrics } from './index.ts';
import { botAllowed, keyId, NOT_LISTED } from './key.ts';
import { BadInput, planMessage, type SendPlan } from './message.ts';
import { resultLabel, toAppError } from './outcome.ts';
import type { Pacing } from './pacing.ts';

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
  client: BotApiClient;
  metrics: TelegramMetrics;
  pacing: Pacing;
}

export async function telegramRoutes(
  app: FastifyInstance,
  { ctx, client, metrics, pacing }: RouteDeps,
): Promise<void> {
  const cfg = ctx.config.telegram;

  async function plan(req: FastifyRequest): Promise<SendPlan> {
    try {
      return planMessage(req.body, { defaultText: cfg.defaultText });
    } catch (err) {
      if (err instanceof BadInput) {
        metrics.refused.inc({ reason: 'input' });
        throw badRequest(err.message);
      }
      throw err;
    }
  }

  app.post(
    '/rest/api/v1/telegram',
    {
      bodyLimit: cfg.maxBodyBytes,
      onRequest: ctx.limiter.hook('telegram-ip', cfg.rateLimit),
      validatorCompiler: objectOnly,
      schema: { summary: 'Send a message through a Telegram bot', tags: ['telegram'], body: bodySchema },
    },
    async (req, reply) => {
      const p = await plan(req);
      if (!botAllowed(p.key, cfg.allowedBots)) {
        metrics.refused.inc({ reason: 'bot' });
        throw forbidden(NOT_LISTED, 'BOT_NOT_ALLOWED');
      }
      const bot = keyId(p.key);
      await pacing.message(req, bot, p.chatId);

      const started = performance.now();
      let r = await client.call(p.key, 'sendMessage', p.params);
      let asPlain = false;
      if (
        p.plain &&
        r.kind === 'api-error' &&
        r.errorCode === 400 &&
        /can't parse entities/i.test(r.description)
      ) {
        req.log.info(
          { bot: bot.slice(0, 8), description: r.description },
          'markup rejected; sending as plain text',
        );
        r = await client.call(p.key, 'sendMessage', p.plain);
        asPlain = true;
      }
      const ms = performance.now() - started;
      const result = resultLabel(r);
      metrics.calls.inc({ result });
      metrics.duration.observe({ result }, ms / 1000);
      const fields = { bot: bot.slice(0, 8), chat: p.chatId, result, ms: Math.round(ms) };
      if (r.kind === 'ok') {
        req.log.info(fields, 'message relayed');
        reply.header('cache-control', 'no-store');
        return { status: 1, msg: asPlain ? 'message sent as plain text' : 'message sent', data: r.result };
      }
      if (r.kind === 'api-error' && r.errorCode === 429)
        await pacing.paused(req, pacing.chatKey(bot, p.chatId), r.retryAfter);
      if (r.kind === 'network')
        req.log.warn(
          { ...fields, code: r.code, detail: r.message, host: client.upstream.host },
          'telegram unreachable',
        );
      else if (r.kind === 'api-error')
        req.log.info({ ...fields, description: r.description }, 'telegram refused');
      else if (r.kind === 'blocked')
        req.log.warn({ ...fields, detail: r.message }, 'telegram address not allowed');
      else req.log.warn(fields, 'telegram failed');
      // Each outcome above wrote its one log line with the bot, chat and Telegram's answer.
      throw alreadyLogged(reply, toAppError(r, cfg.timeoutMs, client.upstream));
    },
  );
}

// POST /rest/api/v1/telegram (docs/protocols/public-interface.md §5): validate, charge the budgets (client
// IP, bot key, Telegram's per-bot and per-chat pacing), call sendMessage once, answer in the legacy
// envelope.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { alreadyLogged, badRequest, tooMany, unavailable } from '../../errors.ts';
import type { Rate } from '../../infra/config/schema.ts';
import type { BotApiClient } from './client.ts';
import type { TelegramMetrics } from './index.ts';
import { keyId } from './key.ts';
import { BadInput, planMessage, type SendPlan } from './message.ts';
import { resultLabel, toAppError } from './outcome.ts';
import type { Pauses } from './pauses.ts';

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
  pauses: Pauses;
}

export async function telegramRoutes(
  app: FastifyInstance,
  { ctx, client, metrics, pauses }: RouteDeps,
): Promise<void> {
  const cfg = ctx.config.telegram;
  const failOpen = ctx.config.redis.failMode === 'open';

  // One budget; refusals say which one so callers know whether to slow down or spread out.
  async function charge(req: FastifyRequest, bucket: string, id: string, rate: Rate, what: string) {
    let d: Awaited<ReturnType<typeof ctx.limiter.take>>;
    try {
      d = await ctx.limiter.take(bucket, id, rate);
    } catch (err) {
      if (failOpen) {
        req.log.warn(
          { err: { message: (err as Error).message }, bucket },
          'rate limit store failed; letting request through',
        );
        return;
      }
      throw unavailable('rate limiter unavailable, try again shortly', 5, 'LIMITER_UNAVAILABLE');
    }
    if (!d.allowed) {
      metrics.refused.inc({ reason: bucket.slice('telegram-'.length) });
      throw tooMany(
        `${what}: ${rate.limit} messages per ${rate.windowMs / 1000}s; retry in ${d.resetSec}s`,
        d.resetSec,
      );
    }
  }

  // A chat Telegram told us to leave alone: answer its remaining retry_after ourselves.
  async function checkPause(req: FastifyRequest, id: string) {
    if (!cfg.honourRetryAfter) return;
    let left = 0;
    try {
      left = await pauses.remaining(id);
    } catch (err) {
      req.log.warn({ err: { message: (err as Error).message } }, 'pause store failed; not pausing');
    }
    if (left > 0) {
      metrics.refused.inc({ reason: 'paused' });
      const sec = Math.ceil(left / 1000);
      throw tooMany(
        `telegram asked to pause this chat (retry_after); retry in ${sec}s`,
        sec,
        'TELEGRAM_PAUSED',
      );
    }
  }

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
      const bot = keyId(p.key);
      // Usernames are case-insensitive; a numeric id counts the same as string or number.
      const chatId = `${bot}:${String(p.chatId).toLowerCase()}`;
      // A paused chat is refused before it can use up any budget.
      await checkPause(req, chatId);
      await charge(req, 'telegram-key', bot, cfg.keyRateLimit, 'rate limit for this bot key exceeded');
      await charge(req, 'telegram-bot', bot, cfg.botRate, "telegram's per-bot pace exceeded");
      await charge(req, 'telegram-chat', chatId, cfg.chatRate, "telegram's per-chat pace exceeded");
      // Bots FAQ: a group takes at most 20 messages a minute from one bot; groups have negative ids.
      if (String(p.chatId).startsWith('-'))
        await charge(req, 'telegram-group', chatId, cfg.groupRate, "telegram's per-group pace exceeded");

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
      if (r.kind === 'api-error' && r.errorCode === 429 && cfg.honourRetryAfter)
        await pauses.pause(chatId, (r.retryAfter ?? 1) * 1000).catch((err: Error) => {
          req.log.warn({ err: { message: err.message } }, 'could not record the retry_after pause');
        });
      if (r.kind === 'network')
        req.log.warn({ ...fields, code: r.code, detail: r.message }, 'telegram unreachable');
      else if (r.kind === 'api-error')
        req.log.info({ ...fields, description: r.description }, 'telegram refused');
      else req.log.warn(fields, 'telegram failed');
      // Each outcome above wrote its one log line with the bot, chat and Telegram's answer.
      throw alreadyLogged(toAppError(r, cfg.timeoutMs));
    },
  );
}

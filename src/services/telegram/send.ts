// POST /rest/api/v1/telegram's handler (the route is in routes.ts): validate, charge the budgets
// (client IP, bot key, Telegram's per-bot and per-chat pacing: pacing.ts), call sendMessage once,
// answer in the legacy envelope. Loaded with the rest of the relay on the first request (relay.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { alreadyLogged, badRequest, forbidden } from '../../infra/http/errors.ts';
import type { BotApiClient } from './client.ts';
import type { TelegramMetrics } from './index.ts';
import { botAllowed, keyId, NOT_LISTED } from './key.ts';
import { BadInput, planMessage, type SendPlan } from './message.ts';
import { resultLabel, toAppError } from './outcome.ts';
import type { Pacing } from './pacing.ts';

export interface SendDeps {
  cfg: Config['telegram'];
  client: BotApiClient;
  metrics: TelegramMetrics;
  pacing: Pacing;
}

async function plan(d: SendDeps, req: FastifyRequest): Promise<SendPlan> {
  try {
    return planMessage(req.body, { defaultText: d.cfg.defaultText });
  } catch (err) {
    if (err instanceof BadInput) {
      d.metrics.refused.inc({ reason: 'input' });
      throw badRequest(err.message);
    }
    throw err;
  }
}

export async function relaySend(d: SendDeps, req: FastifyRequest, reply: FastifyReply) {
  const { cfg, client, metrics, pacing } = d;
  const p = await plan(d, req);
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
}

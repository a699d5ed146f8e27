// The budgets every message pays before it reaches Telegram, whichever way it came (the relay's
// POST, a Bot API send through the base URL, a recipient token): a chat Telegram paused, the bot
// key's budget, and Telegram's own pacing per bot, chat and group (docs/protocols/telegram-bot-api.md
// §5). One place, so the three ways cannot drift apart.
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import type { Rate } from '../../infra/config/schema.ts';
import { tooMany } from '../../infra/http/errors.ts';
import { Outage } from '../../infra/observe/outage.ts';
import type { TelegramMetrics } from './index.ts';
import type { Pauses } from './pauses.ts';

export class Pacing {
  private readonly ctx: ServiceContext;
  private readonly metrics: TelegramMetrics;
  private readonly pauses: Pauses;
  /** While the pause store is down, not pausing is warned once, not once per message. */
  private readonly pauseOutage: Outage;

  constructor(ctx: ServiceContext, metrics: TelegramMetrics, pauses: Pauses) {
    this.ctx = ctx;
    this.metrics = metrics;
    this.pauses = pauses;
    this.pauseOutage = new Outage(ctx.logger, 'telegram pause store');
  }

  private get cfg() {
    return this.ctx.config.telegram;
  }

  /** The pause and budget id of one chat of one bot (usernames are case-insensitive). */
  chatKey(bot: string, chat: string | number): string {
    return `${bot}:${String(chat).toLowerCase()}`;
  }

  /** One budget; a refusal says which one so callers know whether to slow down or spread out. */
  async charge(req: FastifyRequest, bucket: string, id: string, rate: Rate, what: string): Promise<void> {
    let d: Awaited<ReturnType<ServiceContext['limiter']['take']>>;
    try {
      d = await this.ctx.limiter.take(bucket, id, rate);
    } catch (err) {
      this.ctx.limiter.storeFailed(err, bucket, req.log);
      return;
    }
    if (!d.allowed) {
      this.metrics.refused.inc({ reason: bucket.slice('telegram-'.length) });
      throw tooMany(
        `${what}: ${rate.limit} messages per ${rate.windowMs / 1000}s; retry in ${d.resetSec}s`,
        d.resetSec,
      );
    }
  }

  /** A chat Telegram told us to leave alone: answer its remaining retry_after ourselves. */
  async checkPause(req: FastifyRequest, chatKey: string): Promise<void> {
    if (!this.cfg.honourRetryAfter) return;
    let left = 0;
    try {
      left = await this.pauses.remaining(chatKey);
      this.pauseOutage.ok();
    } catch (err) {
      this.pauseOutage.failed(err, 'pause store failed; not pausing', {}, req.log);
    }
    if (left > 0) {
      this.metrics.refused.inc({ reason: 'paused' });
      const sec = Math.ceil(left / 1000);
      throw tooMany(
        `telegram asked to pause this chat (retry_after); retry in ${sec}s`,
        sec,
        'TELEGRAM_PAUSED',
      );
    }
  }

  /**
   * Everything one message pays, in order: a paused chat is refused before it can use up any
   * budget. `chat` is null when the message's chat is not known (an upload whose chat_id is inside
   * the multipart body): the per-bot budgets still apply.
   */
  async message(req: FastifyRequest, bot: string, chat: string | number | null): Promise<void> {
    const cfg = this.cfg;
    const key = chat === null ? null : this.chatKey(bot, chat);
    if (key) await this.checkPause(req, key);
    await this.charge(req, 'telegram-key', bot, cfg.keyRateLimit, 'rate limit for this bot key exceeded');
    await this.charge(req, 'telegram-bot', bot, cfg.botRate, "telegram's per-bot pace exceeded");
    if (!key) return;
    await this.charge(req, 'telegram-chat', key, cfg.chatRate, "telegram's per-chat pace exceeded");
    // Bots FAQ: a group takes at most 20 messages a minute from one bot; groups have negative ids.
    if (String(chat).startsWith('-'))
      await this.charge(req, 'telegram-group', key, cfg.groupRate, "telegram's per-group pace exceeded");
  }

  /** After Telegram's 429 for a chat: pause it for retry_after on every instance. */
  async paused(req: FastifyRequest, chatKey: string, retryAfterSec: number | undefined): Promise<void> {
    if (!this.cfg.honourRetryAfter) return;
    await this.pauses.pause(chatKey, (retryAfterSec ?? 1) * 1000).catch((err: Error) => {
      req.log.warn({ err: { message: err.message } }, 'could not record the retry_after pause');
    });
  }
}

// The Bot API base URL's work for one call (/telegram/bot<key>/<method>) and one file download
// (/telegram/file/bot<key>/<path>): who may call (the operator's bot list, a recipient token's one
// chat and methods), what it pays (Telegram's pacing for messages, a share of the upstream
// connections, a share of the long polls), then the call as the client made it and Telegram's
// answer as Telegram gave it. Uploads and downloads stream through under their caps; the key and
// recipient tokens are never logged, counted or echoed.
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, alreadyLogged, forbidden, notFound, unauthorized } from '../../infra/http/errors.ts';
import { multipartError } from '../../infra/http/multipart.ts';
import type { FairQueue } from '../../infra/limits/fair-queue.ts';
import {
  chatRef,
  type Encoding,
  encodeBody,
  encodingOf,
  longPollTimeout,
  type Params,
  param,
} from './api-body.ts';
import { download } from './api-download.ts';
import {
  abortOnClose,
  hasBody,
  keyCall,
  type Limits,
  type Outgoing,
  recipientCall,
  recipientRefusal,
} from './api-request.ts';
import type { ApiCall, BotApiClient, CallResult } from './client.ts';
import { botApiError, describe } from './envelope.ts';
import type { TelegramMetrics } from './index.ts';
import { botAllowed, isBotKey, keyId, NOT_LISTED } from './key.ts';
import { isLongPoll, isMessage, METHOD_NAME, recipientMethod } from './methods.ts';
import { laterNotLost, queueRefusal, resultLabel, toAppError } from './outcome.ts';
import type { Pacing } from './pacing.ts';
import { confine } from './recipient-params.ts';
import { isRecipientToken, type Recipient, type RecipientStore } from './recipients.ts';

export interface GatewayDeps {
  ctx: ServiceContext;
  client: BotApiClient;
  /** Long polls: connections of their own, so they never hold one a message needs. */
  polls: BotApiClient;
  metrics: TelegramMetrics;
  pacing: Pacing;
  recipients: RecipientStore;
  /** Upstream calls and downloads: the connection pool, shared fairly between clients. */
  apiQueue: FairQueue;
  pollQueue: FairQueue;
}

/** How a recipient inlet of another protocol answers a sent message (Telegram's Message object). */
type Shape = (message: Record<string, unknown>) => unknown;

export interface SendOptions {
  /** A refusal that passes with time is 503, not 429 (senders that retry 5xx only). */
  retryable?: boolean;
  /** The inlet, for the metrics' kind and the log line (ntfy, gotify); default recipient. */
  via?: string;
  /** The answer in the inlet's own shape, from Telegram's Message and the recipient. */
  shape?: (message: Record<string, unknown>, r: Recipient) => unknown;
}

/** Who is calling: a bot key, or a recipient token standing in for one. */
interface Caller {
  key: string;
  bot: string;
  recipient: Recipient | null;
}

export class BotApiGateway {
  private readonly d: GatewayDeps;
  constructor(d: GatewayDeps) {
    this.d = d;
  }

  private get cfg() {
    return this.d.ctx.config.telegram;
  }

  /** The bot key or recipient token in the path, checked: who calls, or why not. */
  async caller(token: string): Promise<Caller> {
    if (isBotKey(token)) {
      if (!botAllowed(token, this.cfg.allowedBots)) throw forbidden(NOT_LISTED, 'BOT_NOT_ALLOWED');
      return { key: token, bot: keyId(token), recipient: null };
    }
    if (isRecipientToken(token)) {
      const r = await this.d.recipients.resolve(token);
      if (!r) throw unauthorized('unknown or revoked recipient token', 'UNKNOWN_RECIPIENT');
      if (!botAllowed(r.botKey, this.cfg.allowedBots)) throw forbidden(NOT_LISTED, 'BOT_NOT_ALLOWED');
      return { key: r.botKey, bot: keyId(r.botKey), recipient: r.recipient };
    }
    // What Telegram answers for a path that holds no token.
    throw notFound('not a bot token', 'NOT_A_TOKEN');
  }

  /** One Bot API call, passed on: who calls, what is sent, what it pays, then Telegram's answer. */
  async call(req: FastifyRequest, reply: FastifyReply, token: string, method: string, test: boolean) {
    if (!METHOD_NAME.test(method)) throw notFound('no such method', 'NO_METHOD');
    const who = await this.caller(token);
    const enc = encodingOf(req.headers['content-type'], hasBody(req));
    if (!enc)
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'a Bot API call is JSON, a form or multipart');
    const rcpt = who.recipient;
    const name = rcpt ? this.permitted(rcpt, method) : method;
    const out = rcpt
      ? await recipientCall(req, enc, this.limits, name, rcpt.chat)
      : await keyCall(req, enc, this.limits);
    const pollSec = isLongPoll(name) && !rcpt ? this.capPoll(out, enc) : null;
    const message = isMessage(name);
    const chat = rcpt ? rcpt.chat : message ? chatRef(param('chat_id', out.params, out.query)) : null;
    if (message) await this.pace(req, who.bot, chat);
    const kind = pollSec !== null ? 'poll' : enc === 'multipart' ? 'upload' : message ? 'message' : 'call';
    const { r, ms } = await this.forward(req, reply, who, { method: name, test, out, pollSec, kind });
    const fields = {
      bot: who.bot.slice(0, 8),
      method: name,
      result: resultLabel(r),
      ms: Math.round(ms),
      ...(rcpt ? { recipient: rcpt.id } : {}),
    };
    return this.answer(req, reply, r, fields, message && chat ? this.d.pacing.chatKey(who.bot, chat) : null);
  }

  /** The canonical name of a method the recipient token was given, or 403. */
  private permitted(rcpt: Recipient, method: string): string {
    const m = recipientMethod(method);
    if (!m || !rcpt.methods.includes(m))
      throw forbidden(`this recipient token may call only ${rcpt.methods.join(', ')}`, 'METHOD_NOT_ALLOWED');
    return m;
  }

  private get limits(): Limits {
    return {
      maxUploadBytes: this.cfg.maxUploadBytes,
      apiMaxBodyBytes: this.cfg.apiMaxBodyBytes,
      bodyTimeoutMs: this.d.ctx.config.server.bodyTimeoutMs,
    };
  }

  /** A long poll's timeout within DEVUTIL_TELEGRAM_LONG_POLL_MAX_SEC (the call rewritten if needed). */
  private capPoll(out: Outgoing, enc: Encoding): number {
    const lp = longPollTimeout(enc, out.params, out.query, this.cfg.longPollMaxSec);
    if (lp.body) out.body = encodeBody(enc === 'json' ? 'json' : 'form', lp.body);
    if (lp.query) out.query = lp.query;
    return lp.sec;
  }

  /** Messages pay the per-IP budget and Telegram's pacing for the bot and the chat. */
  private async pace(req: FastifyRequest, bot: string, chat: string | null): Promise<void> {
    await this.d.pacing.charge(
      req,
      'telegram-ip',
      req.clientKey,
      this.cfg.rateLimit,
      'rate limit for this client exceeded',
    );
    await this.d.pacing.message(req, bot, chat);
  }

  /** The call upstream in its share of the connections (long polls: of their own), then its outcome. */
  private async forward(
    req: FastifyRequest,
    reply: FastifyReply,
    who: Caller,
    o: { method: string; test: boolean; out: Outgoing; pollSec: number | null; kind: string },
  ): Promise<{ r: CallResult; ms: number }> {
    const { out } = o;
    const poll = o.pollSec !== null;
    const c: ApiCall = {
      method: o.method,
      test: o.test,
      query: out.query.toString(),
      body: out.body,
      signal: abortOnClose(reply),
      ...(out.contentType ? { contentType: out.contentType } : {}),
      ...(out.contentLength !== undefined ? { contentLength: out.contentLength } : {}),
      ...(poll ? { timeoutMs: this.cfg.timeoutMs + (o.pollSec ?? 0) * 1000 } : {}),
    };
    const started = performance.now();
    let r: CallResult;
    try {
      r = poll
        ? await this.d.pollQueue.run(req.clientKey, () => this.d.polls.send(who.key, c))
        : await this.d.apiQueue.run(req.clientKey, () => this.d.client.send(who.key, c));
    } catch (err) {
      if (out.body && !Buffer.isBuffer(out.body)) (out.body as Readable).destroy();
      throw queueRefusal(err, poll);
    }
    // A refusal or a cap that ended the upload is the answer, whatever the upstream call saw.
    const ended = out.failure();
    if (ended) {
      const refusal = recipientRefusal(ended);
      throw refusal instanceof AppError ? refusal : multipartError(ended);
    }
    const ms = performance.now() - started;
    const result = resultLabel(r);
    this.d.metrics.api.inc({ kind: o.kind, result });
    this.d.metrics.apiDuration.observe({ kind: o.kind, result }, ms / 1000);
    return { r, ms };
  }

  /**
   * One message from a recipient token's own inlets (/telegram/r/<token>, its Alertmanager
   * webhook, ntfy and Gotify publishes): sendMessage into its chat, with the same rules and budgets
   * as the Bot API path. `params` may depend on the recipient (Gotify's default title is its name).
   * Telegram's answer is passed on as it is, or given to `opts.shape` for an inlet that answers in
   * another protocol's shape (its failures are then thrown, for the route's own envelope).
   * `opts.retryable`: a refusal that passes with time (a budget, Telegram's flood control) is
   * answered 503 with its Retry-After instead of 429, for senders that retry a 5xx and drop a 4xx
   * (Alertmanager: docs/protocols/alertmanager-webhook.md §1).
   */
  async sendAs(
    req: FastifyRequest,
    reply: FastifyReply,
    token: string,
    params: Params | ((r: Recipient) => Params),
    opts: SendOptions = {},
  ): Promise<FastifyReply> {
    try {
      return await this.sendOne(req, reply, token, params, opts);
    } catch (err) {
      throw opts.retryable ? laterNotLost(err) : err;
    }
  }

  /** The recipient a token's own inlet sends for; a path that holds no recipient token says why. */
  private async recipientOf(token: string): Promise<Caller & { recipient: Recipient }> {
    if (!isRecipientToken(token))
      throw notFound(
        isBotKey(token)
          ? 'this is a bot key, not a recipient token: send with it at /bot<key>/sendMessage, or register a recipient token with POST /recipients'
          : "not a recipient token (tgr_ and 43 letters, digits, '_' or '-')",
        'NOT_A_TOKEN',
      );
    const who = await this.caller(token);
    return who as Caller & { recipient: Recipient };
  }

  private async sendOne(
    req: FastifyRequest,
    reply: FastifyReply,
    token: string,
    params: Params | ((r: Recipient) => Params),
    opts: SendOptions,
  ): Promise<FastifyReply> {
    const who = await this.recipientOf(token);
    const rcpt = who.recipient;
    if (!rcpt.methods.includes('sendMessage'))
      throw forbidden(`this recipient token may call only ${rcpt.methods.join(', ')}`, 'METHOD_NOT_ALLOWED');
    let confined: Params;
    try {
      const given = typeof params === 'function' ? params(rcpt) : params;
      confined = confine('sendMessage', rcpt.chat, Object.entries(given));
    } catch (err) {
      throw recipientRefusal(err);
    }
    await this.d.pacing.message(req, who.bot, rcpt.chat);
    const started = performance.now();
    let r: CallResult;
    try {
      r = await this.d.apiQueue.run(req.clientKey, () =>
        this.d.client.send(who.key, {
          method: 'sendMessage',
          body: Buffer.from(JSON.stringify(confined)),
          contentType: 'application/json',
          signal: abortOnClose(reply),
        }),
      );
    } catch (err) {
      throw queueRefusal(err, false);
    }
    const ms = performance.now() - started;
    const result = resultLabel(r);
    const kind = opts.via ?? 'recipient';
    this.d.metrics.api.inc({ kind, result });
    this.d.metrics.apiDuration.observe({ kind, result }, ms / 1000);
    const fields = {
      bot: who.bot.slice(0, 8),
      method: 'sendMessage',
      result,
      ms: Math.round(ms),
      recipient: rcpt.id,
      ...(opts.via ? { via: opts.via } : {}),
    };
    const shape = opts.shape;
    return this.answer(req, reply, r, fields, this.d.pacing.chatKey(who.bot, rcpt.chat), {
      retryable: opts.retryable === true,
      ...(shape ? { shape: (message: Record<string, unknown>) => shape(message, rcpt) } : {}),
    });
  }

  /** Telegram's answer as Telegram gave it; our own failures in the same shape. */
  private async answer(
    req: FastifyRequest,
    reply: FastifyReply,
    r: CallResult,
    fields: Record<string, unknown>,
    chatKey: string | null,
    { retryable = false, shape }: { retryable?: boolean; shape?: Shape } = {},
  ) {
    reply.header('cache-control', 'no-store');
    if (r.kind === 'ok') {
      req.log.info(fields, 'bot api call');
      if (!shape) return reply.code(r.status).type('application/json').send(r.text);
      const message = typeof r.result === 'object' && r.result !== null ? r.result : {};
      return reply
        .code(200)
        .type('application/json')
        .send(`${JSON.stringify(shape(message as Record<string, unknown>))}\n`);
    }
    if (r.kind === 'api-error' && r.errorCode < 500) {
      req.log.info({ ...fields, description: r.description }, 'telegram refused');
      if (r.errorCode === 429 && chatKey) await this.d.pacing.paused(req, chatKey, r.retryAfter);
      // Another protocol's inlet: Telegram's refusal in that protocol's envelope.
      if (shape) throw alreadyLogged(reply, toAppError(r, this.cfg.timeoutMs, this.d.client.upstream));
      if (r.errorCode === 429) reply.header('retry-after', Math.max(1, Math.ceil(r.retryAfter ?? 1)));
      const parameters = {
        ...(r.retryAfter !== undefined ? { retry_after: r.retryAfter } : {}),
        ...(r.migrateTo !== undefined ? { migrate_to_chat_id: r.migrateTo } : {}),
      };
      const later = retryable && r.errorCode === 429;
      const status = later ? 503 : r.errorCode >= 400 ? r.errorCode : 400;
      return reply
        .code(status)
        .type('application/json')
        .send(
          botApiError(
            later ? 503 : r.errorCode,
            later ? describe(503, `telegram: ${r.description}`) : r.description,
            Object.keys(parameters).length ? parameters : undefined,
          ),
        );
    }
    if (r.kind === 'network') {
      req.log.warn(
        { ...fields, code: r.code, detail: r.message, host: this.d.client.upstream.host },
        'telegram unreachable',
      );
    } else if (r.kind === 'blocked')
      req.log.warn({ ...fields, detail: r.message }, 'telegram address not allowed');
    else req.log.warn(fields, 'telegram failed');
    throw alreadyLogged(reply, toAppError(r, this.cfg.timeoutMs, this.d.client.upstream));
  }

  /** One file of the bot, streamed through under the download cap. */
  async file(req: FastifyRequest, reply: FastifyReply, token: string, path: string) {
    const who = await this.caller(token);
    if (who.recipient) throw forbidden('recipient tokens cannot download files', 'METHOD_NOT_ALLOWED');
    const deps = {
      queue: this.d.apiQueue,
      client: this.d.client,
      metrics: this.d.metrics,
      maxFileBytes: this.cfg.maxFileBytes,
      answer: (r: CallResult, fields: Record<string, unknown>) => this.answer(req, reply, r, fields, null),
    };
    return download(deps, req, reply, who, path);
  }
}

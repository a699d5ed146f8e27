// The Bot API base URL's work for one call (/telegram/bot<key>/<method>) and one file download
// (/telegram/file/bot<key>/<path>): who may call (the operator's bot list, a recipient token's one
// chat and methods), what it pays (Telegram's pacing for messages, a share of the upstream
// connections, a share of the long polls), then the call as the client made it and Telegram's
// answer as Telegram gave it. Uploads and downloads stream through under their caps; the key and
// recipient tokens are never logged, counted or echoed.
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, forbidden, notFound, unauthorized } from '../../infra/http/errors.ts';
import { multipartError } from '../../infra/http/multipart.ts';
import type { FairQueue } from '../../infra/limits/fair-queue.ts';
import { type AnswerDeps, answer } from './api-answer.ts';
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
import type { TelegramMetrics } from './index.ts';
import { botAllowed, isBotKey, keyId, NOT_LISTED } from './key.ts';
import { isLongPoll, isMessage, METHOD_NAME, recipientMethod } from './methods.ts';
import { laterNotLost, queueRefusal, resultLabel } from './outcome.ts';
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

/** A call routed to its method: what goes upstream and what it pays. */
interface Route {
  method: string;
  out: Outgoing;
  /** A long poll's timeout in seconds; null for any other call. */
  pollSec: number | null;
  message: boolean;
  chat: string | null;
  kind: string;
}

/** The canonical name of a method the recipient token was given, or 403. */
export function permittedMethod(rcpt: Pick<Recipient, 'methods'>, method: string): string {
  const m = recipientMethod(method);
  if (!m || !rcpt.methods.includes(m))
    throw forbidden(`this recipient token may call only ${rcpt.methods.join(', ')}`, 'METHOD_NOT_ALLOWED');
  return m;
}

/** The metrics' kind of a call: a long poll, an upload, a message or any other call. */
export function callKind(pollSec: number | null, enc: Encoding, message: boolean): string {
  return pollSec !== null ? 'poll' : enc === 'multipart' ? 'upload' : message ? 'message' : 'call';
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
    const { who, enc } = await this.admit(req, token, method);
    const p = await this.route(req, who, method, enc);
    if (p.message) await this.pace(req, who.bot, p.chat);
    const { r, ms } = await this.forward(req, reply, who, { ...p, test });
    const fields = {
      bot: who.bot.slice(0, 8),
      method: p.method,
      result: resultLabel(r),
      ms: Math.round(ms),
      ...(who.recipient ? { recipient: who.recipient.id } : {}),
    };
    const chatKey = p.message && p.chat ? this.d.pacing.chatKey(who.bot, p.chat) : null;
    return answer(this.answering, req, reply, r, fields, chatKey);
  }

  /** The call checked before anything is read: a method name, who calls, a body a Bot API call can have. */
  private async admit(req: FastifyRequest, token: string, method: string) {
    if (!METHOD_NAME.test(method)) throw notFound('no such method', 'NO_METHOD');
    const who = await this.caller(token);
    const enc = encodingOf(req.headers['content-type'], hasBody(req));
    if (!enc)
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'a Bot API call is JSON, a form or multipart');
    return { who, enc };
  }

  /**
   * The call as it goes upstream: the method (a recipient token's: one it was given, confined to
   * its chat), a long poll's timeout capped, the chat a message pays for, the metrics' kind.
   */
  private async route(req: FastifyRequest, who: Caller, method: string, enc: Encoding): Promise<Route> {
    const rcpt = who.recipient;
    const name = rcpt ? permittedMethod(rcpt, method) : method;
    const out = rcpt
      ? await recipientCall(req, enc, this.limits, name, rcpt.chat)
      : await keyCall(req, enc, this.limits);
    const pollSec = isLongPoll(name) && !rcpt ? this.capPoll(out, enc) : null;
    const message = isMessage(name);
    const chat = rcpt ? rcpt.chat : message ? chatRef(param('chat_id', out.params, out.query)) : null;
    return { method: name, out, pollSec, message, chat, kind: callKind(pollSec, enc, message) };
  }

  private get answering(): AnswerDeps {
    return { pacing: this.d.pacing, timeoutMs: this.cfg.timeoutMs, upstream: this.d.client.upstream };
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
    o: Route & { test: boolean },
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
    return { r, ms: this.record(o.kind, r, started) };
  }

  /** The call's count and duration by kind and result; its milliseconds since `started`. */
  private record(kind: string, r: CallResult, started: number): number {
    const ms = performance.now() - started;
    const result = resultLabel(r);
    this.d.metrics.api.inc({ kind, result });
    this.d.metrics.apiDuration.observe({ kind, result }, ms / 1000);
    return ms;
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
    permittedMethod(rcpt, 'sendMessage');
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
    const ms = this.record(opts.via ?? 'recipient', r, started);
    const fields = {
      bot: who.bot.slice(0, 8),
      method: 'sendMessage',
      result: resultLabel(r),
      ms: Math.round(ms),
      recipient: rcpt.id,
      ...(opts.via ? { via: opts.via } : {}),
    };
    const shape = opts.shape;
    return answer(this.answering, req, reply, r, fields, this.d.pacing.chatKey(who.bot, rcpt.chat), {
      retryable: opts.retryable === true,
      ...(shape ? { shape: (message: Record<string, unknown>) => shape(message, rcpt) } : {}),
    });
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
      answer: (r: CallResult, fields: Record<string, unknown>) =>
        answer(this.answering, req, reply, r, fields, null),
    };
    return download(deps, req, reply, who, path);
  }
}

// The Bot API base URL's work for one call (/telegram/bot<key>/<method>) and one file download
// (/telegram/file/bot<key>/<path>): who may call (the operator's bot list, a recipient token's one
// chat and methods), what it pays (Telegram's pacing for messages, a share of the upstream
// connections, a share of the long polls), then the call as the client made it and Telegram's
// answer as Telegram gave it. Uploads and downloads stream through under their caps; the key and
// recipient tokens are never logged, counted or echoed.
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { humanBytes } from '../../infra/config/schema.ts';
import { BodyTooLarge, capStream, discard, readCapped } from '../../infra/egress/capped-body.ts';
import {
  AppError,
  alreadyLogged,
  badGateway,
  badRequest,
  forbidden,
  notFound,
  tooLarge,
  tooMany,
  unauthorized,
  unavailable,
} from '../../infra/http/errors.ts';
import { multipartError } from '../../infra/http/multipart.ts';
import { type FairQueue, QueueFull } from '../../infra/limits/fair-queue.ts';
import {
  BadBody,
  bodyParams,
  chatRef,
  encodeBody,
  encodingOf,
  longPollTimeout,
  type Params,
  param,
} from './api-body.ts';
import { type ApiCall, type BotApiClient, type CallResult, parseAnswer } from './client.ts';
import { botApiError, describe } from './envelope.ts';
import type { TelegramMetrics } from './index.ts';
import { botAllowed, isBotKey, keyId, NOT_LISTED } from './key.ts';
import { isLongPoll, isMessage, METHOD_NAME, recipientMethod } from './methods.ts';
import { resultLabel, toAppError } from './outcome.ts';
import type { Pacing } from './pacing.ts';
import { confine, confineMultipart, type Part, Refused } from './recipient-rules.ts';
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

/** Who is calling: a bot key, or a recipient token standing in for one. */
interface Caller {
  key: string;
  bot: string;
  recipient: Recipient | null;
}

// A file path as getFile answers it (docs/protocols/telegram-bot-api.md §6: documents/file_12.pdf,
// photos/file_3.jpg): nothing that could leave the bot's file directory upstream.
const FILE_PATH = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){0,7}$/;
const FILE_HEADERS_IN = ['range', 'if-range', 'if-none-match', 'if-modified-since'];
const FILE_HEADERS_OUT = [
  'content-type',
  'content-length',
  'content-range',
  'accept-ranges',
  'etag',
  'last-modified',
];

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

  /** One Bot API call, passed on. */
  async call(req: FastifyRequest, reply: FastifyReply, token: string, method: string, test: boolean) {
    if (!METHOD_NAME.test(method)) throw notFound('no such method', 'NO_METHOD');
    const who = await this.caller(token);
    const rcpt = who.recipient;
    if (rcpt) {
      const m = recipientMethod(method);
      if (!m || !rcpt.methods.includes(m))
        throw forbidden(
          `this recipient token may call only ${rcpt.methods.join(', ')}`,
          'METHOD_NOT_ALLOWED',
        );
    }
    const rawQuery = queryOf(req.url);
    let query = new URLSearchParams(rawQuery);
    const hasBody = req.method === 'POST' && bodyComing(req);
    const enc = encodingOf(req.headers['content-type'], hasBody);
    if (!enc)
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'a Bot API call is JSON, a form or multipart');

    let body: Buffer | Readable | null = null;
    let contentType: string | undefined;
    let params: Params = {};
    let failure: () => unknown = () => null;
    if (enc === 'multipart') {
      if (Number(req.headers['content-length']) > this.cfg.maxUploadBytes) throw this.uploadTooLarge();
      if (rcpt) {
        for (const [k, v] of query) this.refuseIf(() => confine({ [k]: v }, rcpt.chat));
        const m = confineMultipart(req.parts() as AsyncIterable<Part>, rcpt.chat);
        body = Readable.from(m.body);
        contentType = m.contentType;
        failure = m.failure;
      } else {
        let over: AppError | null = null;
        body = capStream(req.raw, this.cfg.maxUploadBytes, () => {
          over = this.uploadTooLarge();
          return over;
        });
        contentType = req.headers['content-type'];
        failure = () => over;
      }
    } else if (hasBody) {
      const raw = await readSmallBody(req, this.cfg.apiMaxBodyBytes, this.d.ctx.config.server.bodyTimeoutMs);
      try {
        params = bodyParams(enc, raw);
      } catch (err) {
        if (err instanceof BadBody) throw badRequest(err.message, 'BAD_BODY');
        throw err;
      }
      if (enc !== 'none') {
        body = raw;
        contentType = req.headers['content-type'];
      }
    }
    if (rcpt && enc !== 'multipart') {
      // Query and body together, confined, sent as one body in the client's encoding.
      const merged = this.refuseIf(() => confine({ ...Object.fromEntries(query), ...params }, rcpt.chat));
      const out: 'json' | 'form' = enc === 'json' ? 'json' : 'form';
      body = encodeBody(out, merged);
      contentType = out === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
      params = merged;
      query = new URLSearchParams();
    }

    const poll = isLongPoll(method) && !rcpt;
    let pollSec = 0;
    if (poll) {
      const lp = longPollTimeout(enc, params, query, this.cfg.longPollMaxSec);
      pollSec = lp.sec;
      if (lp.body) body = encodeBody(enc === 'json' ? 'json' : 'form', lp.body);
      if (lp.query) query = lp.query;
    }
    const message = isMessage(method);
    const chat = rcpt ? rcpt.chat : message ? chatRef(param('chat_id', params, query)) : null;
    if (message) {
      await this.d.pacing.charge(
        req,
        'telegram-ip',
        req.clientKey,
        this.cfg.rateLimit,
        'rate limit for this client exceeded',
      );
      await this.d.pacing.message(req, who.bot, chat);
    }

    const gone = abortOnClose(reply);
    const c: ApiCall = {
      method,
      test,
      query: query.toString(),
      body,
      signal: gone,
      ...(contentType ? { contentType } : {}),
      ...(Buffer.isBuffer(body)
        ? {}
        : enc === 'multipart' && !rcpt && req.headers['content-length']
          ? { contentLength: Number(req.headers['content-length']) }
          : {}),
      ...(poll ? { timeoutMs: this.cfg.timeoutMs + pollSec * 1000 } : {}),
    };
    const kind = poll ? 'poll' : enc === 'multipart' ? 'upload' : message ? 'message' : 'call';
    const started = performance.now();
    let r: CallResult;
    try {
      r = poll
        ? await this.d.pollQueue.run(req.clientKey, () => this.d.polls.send(who.key, c))
        : await this.d.apiQueue.run(req.clientKey, () => this.d.client.send(who.key, c));
    } catch (err) {
      if (body instanceof Readable) body.destroy();
      throw queueRefusal(err, poll);
    }
    // A refusal or a cap that ended the upload is the answer, whatever the upstream call saw.
    const ended = failure();
    if (ended)
      throw ended instanceof Refused ? forbidden(ended.message, 'RECIPIENT_REFUSED') : multipartError(ended);
    const ms = performance.now() - started;
    const result = resultLabel(r);
    this.d.metrics.api.inc({ kind, result });
    this.d.metrics.apiDuration.observe({ kind, result }, ms / 1000);
    const fields = {
      bot: who.bot.slice(0, 8),
      method,
      result,
      ms: Math.round(ms),
      ...(rcpt ? { recipient: rcpt.id } : {}),
    };
    return this.answer(req, reply, r, fields, message && chat ? this.d.pacing.chatKey(who.bot, chat) : null);
  }

  /**
   * One message from a recipient token's own inlets (/telegram/r/<token>, its Alertmanager
   * webhook): sendMessage into its chat, with the same rules and budgets as the Bot API path.
   * `retryable`: a refusal that passes with time (a budget, Telegram's flood control) is answered
   * 503 with its Retry-After instead of 429, for senders that retry a 5xx and drop a 4xx
   * (Alertmanager: docs/protocols/alertmanager-webhook.md §1).
   */
  async sendAs(
    req: FastifyRequest,
    reply: FastifyReply,
    token: string,
    params: Params,
    retryable = false,
  ): Promise<FastifyReply> {
    try {
      return await this.sendOne(req, reply, token, params, retryable);
    } catch (err) {
      throw retryable ? laterNotLost(err) : err;
    }
  }

  private async sendOne(
    req: FastifyRequest,
    reply: FastifyReply,
    token: string,
    params: Params,
    retryable: boolean,
  ): Promise<FastifyReply> {
    const who = await this.caller(token);
    const rcpt = who.recipient;
    if (!rcpt) throw notFound('not a recipient token', 'NOT_A_TOKEN');
    if (!rcpt.methods.includes('sendMessage'))
      throw forbidden(`this recipient token may call only ${rcpt.methods.join(', ')}`, 'METHOD_NOT_ALLOWED');
    const confined = this.refuseIf(() => confine(params, rcpt.chat));
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
    this.d.metrics.api.inc({ kind: 'recipient', result });
    this.d.metrics.apiDuration.observe({ kind: 'recipient', result }, ms / 1000);
    const fields = {
      bot: who.bot.slice(0, 8),
      method: 'sendMessage',
      result,
      ms: Math.round(ms),
      recipient: rcpt.id,
    };
    return this.answer(req, reply, r, fields, this.d.pacing.chatKey(who.bot, rcpt.chat), retryable);
  }

  /** Telegram's answer as Telegram gave it; our own failures in the same shape. */
  private async answer(
    req: FastifyRequest,
    reply: FastifyReply,
    r: CallResult,
    fields: Record<string, unknown>,
    chatKey: string | null,
    retryable = false,
  ) {
    reply.header('cache-control', 'no-store');
    if (r.kind === 'ok') {
      req.log.info(fields, 'bot api call');
      return reply.code(r.status).type('application/json').send(r.text);
    }
    if (r.kind === 'api-error' && r.errorCode < 500) {
      req.log.info({ ...fields, description: r.description }, 'telegram refused');
      if (r.errorCode === 429) {
        if (chatKey) await this.d.pacing.paused(req, chatKey, r.retryAfter);
        reply.header('retry-after', Math.max(1, Math.ceil(r.retryAfter ?? 1)));
      }
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
    } else req.log.warn(fields, 'telegram failed');
    throw alreadyLogged(toAppError(r, this.cfg.timeoutMs, this.d.client.upstream));
  }

  /** One file of the bot, streamed through under the download cap. */
  async file(req: FastifyRequest, reply: FastifyReply, token: string, path: string) {
    const who = await this.caller(token);
    if (who.recipient) throw forbidden('recipient tokens cannot download files', 'METHOD_NOT_ALLOWED');
    if (!FILE_PATH.test(path) || path.length > 512)
      throw badRequest('not a file path of the Bot API', 'BAD_PATH');
    const headers: Record<string, string> = {};
    for (const h of FILE_HEADERS_IN) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const gone = abortOnClose(reply);
    const started = performance.now();
    const fields = { bot: who.bot.slice(0, 8), method: 'file' };
    try {
      await this.d.apiQueue.run(req.clientKey, async () => {
        const res = await this.d.client.download(who.key, path, headers, gone);
        if (!('statusCode' in res)) {
          this.d.metrics.api.inc({ kind: 'file', result: resultLabel(res) });
          return this.answer(req, reply, res, fields, null);
        }
        const status = res.statusCode;
        if (status !== 200 && status !== 206 && status !== 304) {
          // An error answer: small JSON from Telegram, read capped and passed on in its shape.
          let text = '';
          try {
            text = (await readCapped(res.body, 64 * 1024)).toString('utf8');
          } catch {
            discard(res.body);
          }
          const r = parseAnswer(status, text, who.key);
          this.d.metrics.api.inc({ kind: 'file', result: resultLabel(r) });
          return this.answer(
            req,
            reply,
            r.kind === 'ok' ? { kind: 'bad-response', status, reason: 'an error status with ok: true' } : r,
            fields,
            null,
          );
        }
        const declared = Number(res.headers['content-length']);
        if (declared > this.cfg.maxFileBytes) {
          discard(res.body);
          throw badGateway(
            `the file is larger than this server relays (DEVUTIL_TELEGRAM_MAX_FILE_BYTES, ${humanBytes(this.cfg.maxFileBytes)})`,
            'FILE_TOO_LARGE',
          );
        }
        reply.code(status);
        for (const h of FILE_HEADERS_OUT) {
          const v = res.headers[h];
          if (typeof v === 'string') reply.header(h, v);
        }
        reply.header('cache-control', 'private, max-age=3600');
        this.d.metrics.api.inc({ kind: 'file', result: 'ok' });
        req.log.info(
          { ...fields, result: 'ok', ms: Math.round(performance.now() - started) },
          'bot api call',
        );
        if (req.method === 'HEAD' || status === 304) {
          discard(res.body);
          return reply.send();
        }
        const out = capStream(res.body as unknown as Readable, this.cfg.maxFileBytes);
        // The slot is held until the bytes have gone: the connection upstream is busy until then.
        const done = new Promise<void>((resolve) => {
          out.once('close', resolve);
          reply.raw.once('close', resolve);
        });
        reply.send(out);
        await done;
        return reply;
      });
    } catch (err) {
      throw queueRefusal(err, false);
    }
    return reply;
  }

  private uploadTooLarge(): AppError {
    return tooLarge(
      `a multipart call may carry at most ${humanBytes(this.cfg.maxUploadBytes)} (DEVUTIL_TELEGRAM_MAX_UPLOAD_BYTES)`,
      'UPLOAD_TOO_LARGE',
    );
  }

  private refuseIf<T>(f: () => T): T {
    try {
      return f();
    } catch (err) {
      if (err instanceof Refused) throw forbidden(err.message, 'RECIPIENT_REFUSED');
      throw err;
    }
  }
}

/** A 429 (a budget, a paused chat, a full share) as 503 with the same Retry-After: see sendAs. */
export function laterNotLost(err: unknown): unknown {
  if (!(err instanceof AppError) || err.status !== 429) return err;
  return unavailable(err.message, Number(err.headers['retry-after']) || 1, err.code);
}

function queueRefusal(err: unknown, poll: boolean): unknown {
  if (!(err instanceof QueueFull)) return err;
  if (err.scope === 'client')
    return tooMany(
      poll
        ? 'too many long polls from this client at once; one getUpdates per bot is all Telegram serves'
        : 'too many Bot API calls from this client at once',
      1,
      'CLIENT_SHARE',
    );
  return unavailable(
    poll ? 'too many long polls open on this server' : 'busy: too many Bot API calls waiting',
    1,
  );
}

function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

function bodyComing(req: FastifyRequest): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

/** Aborts when the client goes away before its answer was sent (a long poll it gave up on). */
function abortOnClose(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}

/** A small body (JSON, form) within its cap and the small-body deadline. */
async function readSmallBody(req: FastifyRequest, max: number, ms: number): Promise<Buffer> {
  const reading = readCapped(req.raw, max, { declared: req.headers['content-length'] });
  reading.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    if (ms > 0)
      timer = setTimeout(
        () => reject(new AppError('BODY_TIMEOUT', 408, `request body not received within ${ms / 1000}s`)),
        ms,
      );
  });
  deadline.catch(() => {});
  try {
    return await Promise.race([reading, deadline]);
  } catch (err) {
    if (err instanceof BodyTooLarge)
      throw tooLarge(
        `a Bot API call's body may be at most ${humanBytes(max)} (DEVUTIL_TELEGRAM_API_MAX_BODY_BYTES)`,
      );
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

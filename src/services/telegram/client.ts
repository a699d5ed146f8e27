// Outbound Bot API calls through the egress client (keep-alive pool, connect and response timeouts, the
// address guard, the operator's outbound proxy: egress.proxy). The bot key is in the URL path
// (docs/protocols/telegram-bot-api.md §1), so nothing that leaves this file carries the URL or an
// unscrubbed error message.
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BodyTooLarge, readCapped } from '../../infra/egress/capped-body.ts';
import { createEgress, type Egress, type EgressPolicy, refusal } from '../../infra/egress/client.ts';
import { proxyHost, routeFor } from '../../infra/egress/route.ts';
import { scrubKey } from './key.ts';

export interface BotApiOptions {
  apiBase: string;
  /** The outbound proxy and allowed ranges (config section egress); default: direct. */
  policy?: EgressPolicy;
  connectTimeoutMs: number;
  timeoutMs: number;
  connections: number;
  maxResponseBytes: number;
  /** `host=address:port` overrides (config egress.resolve). */
  resolve?: readonly string[];
  /** PEM file of extra CAs trusted for the Bot API host. */
  caFile?: string;
}

export type CallResult =
  | { kind: 'ok'; status: number; result: unknown; text: string }
  | {
      kind: 'api-error';
      status: number;
      errorCode: number;
      description: string;
      retryAfter?: number;
      migrateTo?: number;
    }
  /** An answer that is not a Bot API JSON body (an HTML error page, a huge body...). */
  | { kind: 'bad-response'; status: number; reason: string }
  | { kind: 'timeout'; phase: 'connect' | 'response' }
  | { kind: 'network'; code: string; message: string }
  /** The address guard refused Telegram's address (a policy, not an outage): names host, address, setting. */
  | { kind: 'blocked'; message: string };

export type Failure = Exclude<CallResult, { kind: 'ok' | 'api-error' }>;

/** One Bot API call as a client made it: the method, its query string and body, passed on as they are. */
export interface ApiCall {
  method: string;
  /** The `/bot<key>/test/<method>` environment. */
  test?: boolean;
  /** Raw query string without `?` (parameters may travel there too). */
  query?: string;
  /** A buffered body (JSON, form) or a stream (multipart uploads); null for none. */
  body: Buffer | Readable | null;
  contentType?: string;
  contentLength?: number;
  /** Ends the call when the caller went away. */
  signal?: AbortSignal;
  /** Longer than the configured answer timeout (a long poll's own timeout on top). */
  timeoutMs?: number;
}

/** Where calls go, for messages that tell an operator what to fix (never the key). */
export interface Upstream {
  host: string;
  /** host:port of the outbound proxy (DEVUTIL_EGRESS_PROXY), without credentials; '' when direct. */
  proxy: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class BotApiClient {
  private readonly dispatcher: Egress;
  private readonly origin: string;
  private readonly prefix: string;
  readonly upstream: Upstream;

  private readonly opts: BotApiOptions;
  constructor(opts: BotApiOptions) {
    this.opts = opts;
    const base = new URL(opts.apiBase);
    this.origin = base.origin;
    this.prefix = base.pathname.replace(/\/+$/, '');
    const port = Number(base.port) || (base.protocol === 'https:' ? 443 : 80);
    const proxy = opts.policy ? routeFor(opts.policy)(base.hostname, port) : null;
    this.upstream = { host: base.host, proxy: proxy ? proxyHost(proxy) : '' };
    this.dispatcher = createEgress({
      connectTimeoutMs: opts.connectTimeoutMs,
      headersTimeoutMs: opts.timeoutMs,
      bodyTimeoutMs: opts.timeoutMs,
      keepAliveTimeoutMs: 30_000,
      connections: opts.connections,
      ...(opts.policy ? { policy: opts.policy } : {}),
      ...(opts.resolve ? { resolve: opts.resolve } : {}),
      ...(opts.caFile ? { caFile: opts.caFile } : {}),
    });
  }

  /** Calls `method` with a JSON body. Never throws for upstream trouble: the result says what happened. */
  call(key: string, method: string, params: Record<string, unknown>): Promise<CallResult> {
    return this.send(key, {
      method,
      body: Buffer.from(JSON.stringify(params)),
      contentType: 'application/json',
    });
  }

  /** Passes one call on as the client made it and reads the Bot API answer (capped). Never throws. */
  async send(key: string, c: ApiCall): Promise<CallResult> {
    const path = `${this.prefix}/bot${key}/${c.test ? 'test/' : ''}${c.method}${c.query ? `?${c.query}` : ''}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (c.contentType) headers['content-type'] = c.contentType;
    if (c.contentLength !== undefined) headers['content-length'] = String(c.contentLength);
    const timeoutMs = c.timeoutMs ?? this.opts.timeoutMs;
    const request = () =>
      this.dispatcher.request({
        origin: this.origin,
        path,
        method: c.body === null ? 'GET' : 'POST',
        headers,
        body: c.body,
        signal: c.signal
          ? AbortSignal.any([c.signal, AbortSignal.timeout(timeoutMs)])
          : AbortSignal.timeout(timeoutMs),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    let res: Dispatcher.ResponseData;
    try {
      res = await request().catch((err: unknown) => {
        // Nothing was sent when the connection never opened, so one more try cannot send a message
        // twice; a loaded machine can miss a connect deadline on its first call.
        if (connectTimedOut(err) && !(c.body && !Buffer.isBuffer(c.body))) return request();
        throw err;
      });
    } catch (err) {
      return failure(err, key);
    }
    let text: string;
    try {
      text = (
        await readCapped(res.body, this.opts.maxResponseBytes, { declared: res.headers['content-length'] })
      ).toString('utf8');
    } catch (err) {
      if (err instanceof BodyTooLarge)
        return { kind: 'bad-response', status: res.statusCode, reason: err.message };
      return failure(err, key);
    }
    return parseAnswer(res.statusCode, text, key);
  }

  /**
   * GET of a file under `/file/bot<key>/<path>`: the upstream's answer to stream on, or why there
   * is none. The caller caps and closes the body.
   */
  async download(
    key: string,
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Dispatcher.ResponseData | Failure> {
    try {
      return await this.dispatcher.request({
        origin: this.origin,
        path: `${this.prefix}/file/bot${key}/${path}`,
        method: 'GET',
        headers,
        signal,
      });
    } catch (err) {
      return failure(err, key) as Failure;
    }
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

/** A Bot API answer: `{ok: true, result}` or `{ok: false, error_code, description, parameters}`. */
export function parseAnswer(status: number, text: string, key: string): CallResult {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { kind: 'bad-response', status, reason: 'body is not JSON' };
  }
  if (!isRecord(data) || typeof data['ok'] !== 'boolean')
    return { kind: 'bad-response', status, reason: 'body is not a Bot API response' };
  if (data['ok'] === true) return { kind: 'ok', status, result: data['result'], text };
  const code = typeof data['error_code'] === 'number' ? data['error_code'] : status;
  const desc = typeof data['description'] === 'string' ? data['description'] : `error ${code}`;
  const p = isRecord(data['parameters']) ? data['parameters'] : {};
  return {
    kind: 'api-error',
    status,
    errorCode: code,
    description: scrubKey(desc, key).slice(0, 500),
    ...(typeof p['retry_after'] === 'number' ? { retryAfter: p['retry_after'] } : {}),
    ...(typeof p['migrate_to_chat_id'] === 'number' ? { migrateTo: p['migrate_to_chat_id'] } : {}),
  };
}

function connectTimedOut(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'UND_ERR_CONNECT_TIMEOUT';
}

function failure(err: unknown, key: string): CallResult {
  const refused = refusal(err);
  if (refused) return { kind: 'blocked', message: refused.message };
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
  const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'ERROR';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { kind: 'timeout', phase: 'connect' };
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'TimeoutError')
    return { kind: 'timeout', phase: 'response' };
  const cause = e.cause as { code?: unknown } | undefined;
  const detail = typeof cause?.code === 'string' ? `${code}/${cause.code}` : code;
  const message = typeof e.message === 'string' ? scrubKey(e.message, key).slice(0, 200) : '';
  return { kind: 'network', code: detail, message };
}

// Outbound Bot API calls through the egress client (keep-alive pool, connect and response timeouts, the
// address guard, optional HTTP(S) proxy). The bot key is in the URL path
// (docs/protocols/telegram-bot-api.md §1), so nothing that leaves this file carries the URL or an
// unscrubbed error message.
import type { Dispatcher } from 'undici';
import { BodyTooLarge, readCapped } from '../../infra/egress/capped-body.ts';
import { createEgress, type Egress } from '../../infra/egress/client.ts';
import { scrubKey } from './key.ts';

export interface BotApiOptions {
  apiBase: string;
  proxyUrl: string;
  connectTimeoutMs: number;
  timeoutMs: number;
  connections: number;
  maxResponseBytes: number;
  /** `host=address:port` overrides (config egress.resolve). */
  resolve?: readonly string[];
}

export type CallResult =
  | { kind: 'ok'; status: number; result: unknown }
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
  | { kind: 'network'; code: string; message: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class BotApiClient {
  private readonly dispatcher: Egress;
  private readonly origin: string;
  private readonly prefix: string;

  private readonly opts: BotApiOptions;
  constructor(opts: BotApiOptions) {
    this.opts = opts;
    const base = new URL(opts.apiBase);
    this.origin = base.origin;
    this.prefix = base.pathname.replace(/\/+$/, '');
    this.dispatcher = createEgress({
      connectTimeoutMs: opts.connectTimeoutMs,
      headersTimeoutMs: opts.timeoutMs,
      bodyTimeoutMs: opts.timeoutMs,
      keepAliveTimeoutMs: 30_000,
      connections: opts.connections,
      ...(opts.proxyUrl ? { proxyUrl: opts.proxyUrl } : {}),
      ...(opts.resolve ? { resolve: opts.resolve } : {}),
    });
  }

  /** Calls `method` with a JSON body. Never throws for upstream trouble: the result says what happened. */
  async call(key: string, method: string, params: Record<string, unknown>): Promise<CallResult> {
    const body = JSON.stringify(params);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.dispatcher.request({
        origin: this.origin,
        path: `${this.prefix}/bot${key}/${method}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      return failure(err, key);
    }
    let text: string;
    try {
      text = (await readCapped(res.body, this.opts.maxResponseBytes)).toString('utf8');
    } catch (err) {
      if (err instanceof BodyTooLarge)
        return { kind: 'bad-response', status: res.statusCode, reason: err.message };
      return failure(err, key);
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return { kind: 'bad-response', status: res.statusCode, reason: 'body is not JSON' };
    }
    if (!isRecord(data) || typeof data['ok'] !== 'boolean')
      return { kind: 'bad-response', status: res.statusCode, reason: 'body is not a Bot API response' };
    if (data['ok'] === true) return { kind: 'ok', status: res.statusCode, result: data['result'] };
    const code = typeof data['error_code'] === 'number' ? data['error_code'] : res.statusCode;
    const desc = typeof data['description'] === 'string' ? data['description'] : `error ${code}`;
    const p = isRecord(data['parameters']) ? data['parameters'] : {};
    return {
      kind: 'api-error',
      status: res.statusCode,
      errorCode: code,
      description: scrubKey(desc, key).slice(0, 500),
      ...(typeof p['retry_after'] === 'number' ? { retryAfter: p['retry_after'] } : {}),
      ...(typeof p['migrate_to_chat_id'] === 'number' ? { migrateTo: p['migrate_to_chat_id'] } : {}),
    };
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

function failure(err: unknown, key: string): CallResult {
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

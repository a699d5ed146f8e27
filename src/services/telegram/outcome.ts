// Bot API outcomes -> truthful HTTP answers for relay callers (docs/protocols/telegram-bot-api.md §4):
// Telegram's 4xx keep their status and description, 429 carries Retry-After, upstream trouble is 502 and
// timeouts 504.
import {
  AppError,
  badGateway,
  forbidden,
  gatewayTimeout,
  tooMany,
  unavailable,
} from '../../infra/http/errors.ts';
import { QueueFull } from '../../infra/limits/fair-queue.ts';
import type { CallResult, Upstream } from './client.ts';

/** A short label for logs and the `result` metric label (never the key, never a chat). */
export function resultLabel(r: CallResult): string {
  switch (r.kind) {
    case 'ok':
      return 'ok';
    case 'api-error':
      return r.errorCode >= 400 && r.errorCode < 500 ? String(r.errorCode) : '5xx';
    case 'bad-response':
      return 'bad_response';
    case 'timeout':
      return 'timeout';
    case 'network':
      return 'network';
    case 'blocked':
      return 'blocked';
  }
}

/**
 * Where the relay tried to go, for an operator reading an unreachable error: the host, and the
 * setting that routes calls through a proxy (many networks reach Telegram only that way).
 */
export function via(u: Upstream): string {
  return u.proxy
    ? `${u.host} through the proxy ${u.proxy} (DEVUTIL_EGRESS_PROXY)`
    : `${u.host}; if this server reaches Telegram only through a proxy, set DEVUTIL_EGRESS_PROXY`;
}

export function toAppError(
  r: Exclude<CallResult, { kind: 'ok' }>,
  timeoutMs: number,
  upstream: Upstream,
): AppError {
  switch (r.kind) {
    case 'api-error': {
      if (r.errorCode === 429) return tooMany(r.description, r.retryAfter ?? 1, 'TELEGRAM_429');
      let msg = r.description;
      // docs/protocols/telegram-bot-api.md §4: the caller must switch to the supergroup's id; tell them
      // which.
      if (r.migrateTo !== undefined) msg += ` (migrate_to_chat_id ${r.migrateTo})`;
      const status = r.errorCode >= 400 && r.errorCode < 500 ? r.errorCode : 502;
      return new AppError(
        `TELEGRAM_${r.errorCode}`,
        status,
        status === 502 ? `telegram failed: ${msg}` : msg,
      );
    }
    case 'bad-response':
      return badGateway(
        `telegram answered HTTP ${r.status} without a Bot API body (${r.reason})`,
        'TELEGRAM_BAD_RESPONSE',
      );
    case 'timeout':
      return r.phase === 'connect'
        ? gatewayTimeout(
            `telegram did not accept a connection in time at ${via(upstream)}`,
            'TELEGRAM_CONNECT_TIMEOUT',
          )
        : gatewayTimeout(
            `telegram did not answer within ${timeoutMs} ms; the message may still have been sent`,
            'TELEGRAM_TIMEOUT',
          );
    case 'blocked':
      // A refusal by policy is 403, which senders do not retry as they retry a 502.
      return forbidden(`telegram's address is not allowed: ${r.message}`, 'EGRESS_BLOCKED');
    case 'network':
      return badGateway(`could not reach telegram (${r.code}) at ${via(upstream)}`, 'TELEGRAM_UNREACHABLE');
  }
}

/** A 429 (a budget, a paused chat, a full share) as 503 with the same Retry-After, for senders that retry 5xx only. */
export function laterNotLost(err: unknown): unknown {
  if (!(err instanceof AppError) || err.status !== 429) return err;
  return unavailable(err.message, Number(err.headers['retry-after']) || 1, err.code);
}

/** A full fair queue as 429 (this client's share) or 503 (the server's), anything else as it is. */
export function queueRefusal(err: unknown, poll: boolean): unknown {
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

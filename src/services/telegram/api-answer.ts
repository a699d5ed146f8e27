// The last step of a Bot API call: Telegram's answer passed on as Telegram gave it (or in another
// protocol's shape for a recipient inlet), its own refusals with their status and parameters, and
// upstream trouble thrown as our failure in the same shape. The one log line of the call is here.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { alreadyLogged } from '../../infra/http/errors.ts';
import type { CallResult, Upstream } from './client.ts';
import { botApiError, describe } from './envelope.ts';
import { toAppError } from './outcome.ts';
import type { Pacing } from './pacing.ts';

/** How a recipient inlet of another protocol answers a sent message (Telegram's Message object). */
export type Shape = (message: Record<string, unknown>) => unknown;

export interface AnswerDeps {
  pacing: Pacing;
  /** The configured answer timeout, named in a timeout's message. */
  timeoutMs: number;
  upstream: Upstream;
}

export interface AnswerOptions {
  /** Telegram's 429 becomes 503 (senders that retry 5xx only). */
  retryable?: boolean;
  shape?: Shape;
}

type ApiError = Extract<CallResult, { kind: 'api-error' }>;

/**
 * Telegram's refusal (error_code below 500) as the Bot API answer: its status (400 for a code that
 * is not an HTTP error), body with retry_after and migrate_to_chat_id, and Retry-After on a 429.
 * `retryable`: a 429 is answered 503, its description saying so.
 */
export function refusal(
  r: ApiError,
  retryable: boolean,
): { status: number; body: Record<string, unknown>; retryAfter?: number } {
  const parameters = {
    ...(r.retryAfter !== undefined ? { retry_after: r.retryAfter } : {}),
    ...(r.migrateTo !== undefined ? { migrate_to_chat_id: r.migrateTo } : {}),
  };
  const later = retryable && r.errorCode === 429;
  return {
    status: later ? 503 : r.errorCode >= 400 ? r.errorCode : 400,
    body: botApiError(
      later ? 503 : r.errorCode,
      later ? describe(503, `telegram: ${r.description}`) : r.description,
      Object.keys(parameters).length ? parameters : undefined,
    ),
    ...(r.errorCode === 429 ? { retryAfter: Math.max(1, Math.ceil(r.retryAfter ?? 1)) } : {}),
  };
}

/** Telegram's answer as Telegram gave it; our own failures in the same shape. */
export async function answer(
  d: AnswerDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  r: CallResult,
  fields: Record<string, unknown>,
  chatKey: string | null,
  { retryable = false, shape }: AnswerOptions = {},
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
    if (r.errorCode === 429 && chatKey) await d.pacing.paused(req, chatKey, r.retryAfter);
    // Another protocol's inlet: Telegram's refusal in that protocol's envelope.
    if (shape) throw alreadyLogged(reply, toAppError(r, d.timeoutMs, d.upstream));
    const a = refusal(r, retryable);
    if (a.retryAfter !== undefined) reply.header('retry-after', a.retryAfter);
    return reply.code(a.status).type('application/json').send(a.body);
  }
  if (r.kind === 'network') {
    req.log.warn(
      { ...fields, code: r.code, detail: r.message, host: d.upstream.host },
      'telegram unreachable',
    );
  } else if (r.kind === 'blocked')
    req.log.warn({ ...fields, detail: r.message }, 'telegram address not allowed');
  else req.log.warn(fields, 'telegram failed');
  throw alreadyLogged(reply, toAppError(r, d.timeoutMs, d.upstream));
}

// Failures under /telegram/ answer as the Bot API does (docs/protocols/telegram-bot-api.md §4), so
// bot libraries pointed at this base URL read them as they read Telegram's: `{"ok": false,
// "error_code": N, "description": "Reason: detail", "parameters": {"retry_after": S}}`.
import type { Envelope } from '../../infra/http/envelopes.ts';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** Telegram's description form: the reason phrase, then what went wrong. */
export function describe(status: number, message: string): string {
  const reason = REASONS[status] ?? 'Error';
  return message.startsWith(reason) ? message : `${reason}: ${message}`;
}

export function botApiError(
  status: number,
  description: string,
  parameters?: Record<string, number>,
): Record<string, unknown> {
  return { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) };
}

export const BOT_API_ENVELOPE: Envelope = {
  contentType: 'application/json',
  body(status, message, _code, headers) {
    const retry = Number(headers?.['retry-after']);
    return JSON.stringify(
      botApiError(status, describe(status, message), retry > 0 ? { retry_after: retry } : undefined),
    );
  },
};

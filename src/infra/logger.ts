// pino options shared by the HTTP server and the relay: redaction of credentials in headers, URLs
// (signed query strings, user:token@, Telegram's /bot<token>/ paths) and well-known body fields.
import type { FastifyReply, FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

const SECRET_PARAM =
  /(sig|signature|token|secret|password|passwd|credential|auth|apikey|api_key|key-pair|x-amz-security)/i;
const BOT_PATH = /\/bot\d+:[A-Za-z0-9_-]+/g;
const BOT_TOKEN = /\b\d{5,}:[A-Za-z0-9_-]{20,}\b/g;
const USERINFO = /(\/\/|^|\/)([^/@\s:]*):([^/@\s]+)@/g;

/** Removes secrets that may appear in a URL or path; cheap enough for every log line. */
export function redactUrl(url: string): string {
  let out = url.replace(BOT_PATH, '/bot[redacted]').replace(USERINFO, '$1$2:[redacted]@');
  const q = out.indexOf('?');
  if (q !== -1) {
    const query = out
      .slice(q + 1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq === -1 ? pair : pair.slice(0, eq);
        return eq !== -1 && SECRET_PARAM.test(decodeSafe(name)) ? `${name}=[redacted]` : pair;
      })
      .join('&');
    out = `${out.slice(0, q)}?${query}`;
  }
  return out;
}

/** Masks anything shaped like a Telegram bot token inside free text (error messages, causes). */
export function redactText(s: string): string {
  return s.replace(BOT_PATH, '/bot[redacted]').replace(BOT_TOKEN, '[redacted]');
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-owner-token"]',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
  'res.headers["x-owner-token"]',
  '*.apiKey',
  '*.token',
  '*.adminToken',
  '*.password',
];

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: {
      req: (req: FastifyRequest) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.headers?.host,
        remoteAddress: req.ip,
      }),
      res: (res: FastifyReply) => ({ statusCode: res.statusCode }),
      err: serializeError,
    },
  };
}

/** Any thrown value (not only Errors: libraries throw strings and plain objects) with secrets masked. */
export function serializeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) {
    const text = typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
    return { type: typeof err, message: redactText(String(text).slice(0, 2000)) };
  }
  const e = err as Error & { code?: unknown };
  return {
    type: e.name,
    message: redactText(String(e.message)),
    code: e.code,
    stack: typeof e.stack === 'string' ? redactText(e.stack) : undefined,
    cause: e.cause instanceof Error ? redactText(String(e.cause.message)) : undefined,
  };
}

export function createLogger(level: string, dest?: DestinationStream): Logger {
  return dest ? pino(loggerOptions(level), dest) : pino(loggerOptions(level));
}

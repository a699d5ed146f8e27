// pino options shared by the HTTP server and the relay: credentials in headers and well-known
// fields are censored by path; every logged string (message, fields, request URL, error message,
// stack and cause) goes through the one redaction function, whatever its field is called.
import type { FastifyReply, FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { canonicalIp } from '../http/client-ip.ts';
import { prettyLine } from './log-pretty.ts';
import { isSecretName, jsonText, redact, redactFields } from './redact.ts';

export { protectSecrets, redact } from './redact.ts';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-owner-token"]',
  'req.headers["proxy-authorization"]',
  'req.headers["x-encrypt-password"]',
  'req.headers["x-decrypt-password"]',
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
    // Runs before the serializers: strings in any field (upstream URLs, Location, reasons).
    formatters: { log: (obj) => redactFields(obj) },
    serializers: {
      msg: redact,
      req: (req: FastifyRequest) => ({
        method: req.method,
        url: redact(req.url),
        host: req.headers?.host,
        // The caller as responses show it: after the onRequest hook the trusted-proxy walk is done;
        // Fastify's 'incoming request' line comes earlier and gets the peer, IPv4-mapped unwrapped.
        remoteAddress: req.clientIp || (canonicalIp(req.ip ?? '') ?? req.ip),
      }),
      // The body's size when it is known before it is sent (a stream without a length has none).
      res: (res: FastifyReply) => {
        const len = Number(res.getHeader?.('content-length'));
        return { statusCode: res.statusCode, ...(Number.isFinite(len) && len >= 0 ? { size: len } : {}) };
      },
      err: serializeError,
    },
  };
}

/**
 * Any thrown value (not only Errors: libraries throw strings and plain objects) as a structured
 * object with secrets masked: `{type, message, code?}`, never a JSON text inside the JSON line.
 * A plain object keeps its scalar fields under `fields` (credential-named ones masked).
 */
export function serializeError(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown };
    const body = jsonText(String(e.message)) ?? bodyOf(e.cause);
    return {
      type: e.name,
      message: messageText(String(e.message)),
      code: e.code,
      stack: typeof e.stack === 'string' ? redact(e.stack) : undefined,
      cause: causeText(e.cause),
      ...(body ? { body } : {}),
    };
  }
  if (typeof err !== 'object' || err === null) {
    const text = typeof err === 'string' ? err : String(err);
    const body = typeof err === 'string' ? jsonText(err) : undefined;
    return {
      type: err === null ? 'null' : typeof err,
      message: messageText(text.slice(0, 2000)),
      ...(body ? { body } : {}),
    };
  }
  const o = err as Record<string, unknown>;
  const fields: Record<string, string | number | boolean> = {};
  for (const k of Object.keys(o).slice(0, 20)) {
    const v = o[k];
    if (['type', 'message', 'code', 'stack', 'cause'].includes(k)) continue;
    if (typeof v === 'string') fields[k] = isSecretName(k) ? '[redacted]' : redact(v.slice(0, 300));
    else if (typeof v === 'number' || typeof v === 'boolean') fields[k] = v;
  }
  const ctor = (Object.getPrototypeOf(o) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  const named = typeof ctor === 'string' && ctor !== 'Object' ? ctor : 'object';
  // The log formatter may have turned a JSON message into its structure already.
  const m = o['message'];
  const text = typeof m === 'string' ? m : m !== null && typeof m === 'object' ? safeJson(m) : undefined;
  const body = (text === undefined ? undefined : jsonText(text)) ?? bodyOf(o['cause']);
  return {
    type: typeof o['type'] === 'string' ? o['type'] : named,
    message: text === undefined ? `a thrown ${named} without a message` : messageText(text.slice(0, 2000)),
    code: typeof o['code'] === 'string' || typeof o['code'] === 'number' ? o['code'] : undefined,
    cause: causeText(o['cause']),
    ...(Object.keys(fields).length ? { fields } : {}),
    ...(body ? { body } : {}),
  };
}

/**
 * An error message as plain text: one that is a whole JSON document (an upstream's error body
 * thrown as is) is named by its own message field, the document itself going under `body`.
 */
function messageText(text: string): string {
  const doc = jsonText(text);
  if (!doc) return redact(text);
  const o = (Array.isArray(doc) ? doc[0] : doc) as Record<string, unknown> | undefined;
  const inner = o && typeof o === 'object' ? (o['error'] ?? o) : undefined;
  for (const src of [o, inner])
    if (src && typeof src === 'object')
      for (const k of ['message', 'error_description', 'description', 'detail', 'error'])
        if (typeof (src as Record<string, unknown>)[k] === 'string')
          return String((src as Record<string, unknown>)[k]).slice(0, 300);
  return 'an error given as a JSON document (see body)';
}

/**
 * The first structured document in a cause chain: an upstream's parsed error body (openid-client's
 * ResponseBodyError keeps it as `cause`), or a cause whose message is JSON text.
 */
function bodyOf(cause: unknown): Record<string, unknown> | unknown[] | undefined {
  for (let c = cause, i = 0; c !== undefined && c !== null && i < 4; i++) {
    if (typeof c === 'string') return jsonText(c);
    if (c instanceof Error) {
      const doc = jsonText(String(c.message));
      if (doc) return doc;
      c = c.cause;
      continue;
    }
    if (typeof c !== 'object' || isResponse(c)) return undefined;
    const proto = Object.getPrototypeOf(c) as unknown;
    if (proto !== Object.prototype && proto !== null && !Array.isArray(c)) return undefined;
    return jsonText(safeJson(c));
  }
  return undefined;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

/** A fetch Response (openid-client keeps an unexpected answer as the error's cause). */
function isResponse(v: unknown): v is { status: number; url: string } {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { status?: unknown }).status === 'number' &&
    typeof (v as { url?: unknown }).url === 'string' &&
    typeof (v as { headers?: unknown }).headers === 'object'
  );
}

/** An error as `{type, message, code}` without its stack, for a warn line about an outside fault. */
export function briefError(err: unknown): Record<string, unknown> {
  const { stack: _stack, ...rest } = serializeError(err);
  return rest;
}

/** The cause chain's messages, outermost first (undici and the AWS SDK nest the useful one). */
function causeText(cause: unknown): string | undefined {
  const parts: string[] = [];
  for (let c = cause, i = 0; c !== undefined && c !== null && i < 4; i++) {
    parts.push(causePart(c));
    c = c instanceof Error ? c.cause : undefined;
  }
  return parts.length ? redact(parts.join(' <- ').slice(0, 2000)) : undefined;
}

/** One link of a cause chain as text: never "[object Object]", never JSON text (that is `body`). */
function causePart(c: unknown): string {
  if (c instanceof Error)
    return jsonText(String(c.message)) ? messageText(String(c.message)) : String(c.message);
  if (isResponse(c)) return `HTTP ${c.status}${c.url ? ` from ${c.url}` : ''}`;
  if (typeof c === 'string') return jsonText(c) ? messageText(c) : c;
  if (typeof c !== 'object') return String(c);
  const m = (c as { message?: unknown }).message;
  if (typeof m === 'string') return messageText(m);
  const j = safeJson(c);
  return jsonText(j) ? messageText(j) : 'a structured cause';
}

export type LogFormat = 'auto' | 'pretty' | 'json';

/** `auto` is pretty for a person at a terminal and JSON for log collectors, files and pipes. */
export function resolveFormat(format: LogFormat, isTty: boolean): 'pretty' | 'json' {
  return format === 'auto' ? (isTty ? 'pretty' : 'json') : format;
}

/**
 * A logger writing to `dest` (default stdout). Pretty lines are formatted from the finished JSON
 * line, so redaction and serializers apply the same way in both formats.
 */
export function createLogger(level: string, dest?: DestinationStream, format: LogFormat = 'json'): Logger {
  const tty = dest === undefined && process.stdout.isTTY === true;
  if (resolveFormat(format, tty) === 'json')
    return dest ? pino(loggerOptions(level), dest) : pino(loggerOptions(level));
  // A person is reading: write each line at once (pino's default stdout stream buffers).
  const out = dest ?? pino.destination({ dest: 1, sync: true });
  return pino(loggerOptions(level), { write: (line: string) => out.write(prettyLine(line, tty)) });
}

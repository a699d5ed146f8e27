// Gotify's message API (docs/telegram.md, ntfy and Gotify), read as Gotify's server reads it:
// POST /message with the application token in ?token=, X-Gotify-Key or Authorization: Bearer, and
// title, message, priority as JSON (with extras), a form or multipart fields (the query string
// after them). The token is a recipient token; given in two places, they must be the same. Markdown
// when extras say client::display contentType text/markdown; client::notification's click.url and
// bigImageUrl become links. Answers are Gotify's message object; failures Gotify's {error,
// errorCode, errorDescription}. Framework-free.

import type { IncomingHttpHeaders } from 'node:http';
import type { Envelope } from '../../infra/http/envelopes.ts';
import { AppError, badRequest } from '../../infra/http/errors.ts';
import { JsonError, parseJson } from '../../infra/http/strict-json.ts';
import type { Notice } from './notice.ts';

// Not `import ... from 'node:http'`: an ES import of node:http reads all its exports, and its lazy
// WebSocket ones load Node's bundled undici, tens of ms of CPU at every start (start-up profile).
const { STATUS_CODES } = process.getBuiltinModule('node:http');

export interface GotifyRequest {
  headers: IncomingHttpHeaders;
  query: Record<string, unknown>;
  body: Buffer | undefined;
}

export interface GotifyMessage {
  title: string;
  message: string;
  /** As given; null when the sender gave none. */
  priority: number | null;
  extras: Record<string, unknown> | null;
}

export const GOTIFY_ENVELOPE: Envelope = {
  contentType: 'application/json',
  body: (status, message) =>
    JSON.stringify({ error: STATUS_CODES[status] ?? 'Error', errorCode: status, errorDescription: message }),
};

const first = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;

/** The application token wherever Gotify reads one; the same token when given more than once. */
export function gotifyToken(r: GotifyRequest): string {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(String(r.headers.authorization ?? ''))?.[1];
  const given = [first(r.query['token']), first(r.headers['x-gotify-key']), bearer]
    .map((t) => t?.trim())
    .filter((t): t is string => !!t);
  if (given.length === 0)
    throw new AppError(
      'NO_TOKEN',
      401,
      'you need to provide a valid access token or user credentials to access this api',
    );
  if (new Set(given).size > 1)
    throw badRequest(
      'the token is given twice, differently (query, X-Gotify-Key, Authorization)',
      'TWO_TOKENS',
    );
  return given[0]!;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function priorityField(v: unknown): number | null {
  if (v === undefined || v === null || v === '') return null;
  const n = typeof v === 'string' && /^-?\d{1,9}$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw badRequest("Field 'priority' is not valid");
  return n;
}

/** The message of a JSON, form or multipart body (query parameters after a form's). Throws AppError. */
export async function gotifyMessage(r: GotifyRequest, maxDepth: number): Promise<GotifyMessage> {
  const type = String(r.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  let fields: Record<string, unknown>;
  let extras: Record<string, unknown> | null = null;
  if (type === 'application/json') {
    let m: unknown;
    try {
      m = parseJson(r.body?.toString('utf8') ?? '', { duplicates: 'refuse', maxDepth });
    } catch (err) {
      if (err instanceof JsonError) throw badRequest(err.message, 'BAD_JSON');
      throw err;
    }
    if (!isRecord(m)) throw badRequest('the body must be a JSON object', 'BAD_JSON');
    for (const k of ['title', 'message'])
      if (m[k] !== undefined && m[k] !== null && typeof m[k] !== 'string')
        throw badRequest(`Field '${k}' is not valid`);
    if (m['priority'] !== undefined && m['priority'] !== null && typeof m['priority'] !== 'number')
      throw badRequest("Field 'priority' is not valid");
    if (m['extras'] !== undefined && m['extras'] !== null && !isRecord(m['extras']))
      throw badRequest("Field 'extras' is not valid");
    fields = m;
    extras = isRecord(m['extras']) ? m['extras'] : null;
  } else {
    // A form's own fields first, then the query string's (Go's Request.Form order).
    const form = new Map<string, string>();
    const body = r.body ?? Buffer.alloc(0);
    if (type === 'multipart/form-data') {
      const data = await new Response(Uint8Array.from(body), {
        headers: { 'content-type': String(r.headers['content-type']) },
      })
        .formData()
        .catch(() => {
          throw badRequest('the multipart body does not parse', 'BAD_MULTIPART');
        });
      data.forEach((v, k) => {
        if (typeof v === 'string' && !form.has(k)) form.set(k, v);
      });
    } else if (type === 'application/x-www-form-urlencoded' || type === '') {
      for (const [k, v] of new URLSearchParams(body.toString('utf8'))) if (!form.has(k)) form.set(k, v);
    } else throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'send JSON, a form or multipart');
    fields = {};
    for (const k of ['title', 'message', 'priority']) fields[k] = form.get(k) ?? first(r.query[k]);
  }
  const message = typeof fields['message'] === 'string' ? fields['message'] : '';
  // Gotify requires a message; Telegram cannot send a blank one either.
  if (message.trim() === '') throw badRequest("Field 'message' is required");
  return {
    title: typeof fields['title'] === 'string' ? fields['title'] : '',
    message,
    priority: priorityField(fields['priority']),
    extras,
  };
}

const at = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (isRecord(v) ? v[k] : undefined), o);

/**
 * The notification: the title, or the application's name (the token's name) as Gotify does, and
 * Gotify's priorities on ntfy's scale (its apps: 0-3 quiet, 4-7 normal, 8-10 high).
 */
export function gotifyNotice(m: GotifyMessage, appName: string): Notice {
  const p = m.priority;
  const click = at(m.extras, 'client::notification', 'click', 'url');
  const image = at(m.extras, 'client::notification', 'bigImageUrl');
  return {
    title: m.title.trim() || appName,
    message: m.message,
    markdown: at(m.extras, 'client::display', 'contentType') === 'text/markdown',
    priority: p === null ? 3 : p <= 3 ? 2 : p <= 7 ? 3 : p <= 9 ? 4 : 5,
    tags: [],
    click: typeof click === 'string' ? click : '',
    attach: typeof image === 'string' && /^https?:\/\//i.test(image) ? { url: image, name: 'image' } : null,
  };
}

/** Gotify's answer: the created message (its id is Telegram's message id). */
export function gotifyAnswer(
  m: GotifyMessage,
  title: string,
  sent: Record<string, unknown>,
  appid: number,
): Record<string, unknown> {
  const date = typeof sent['date'] === 'number' ? new Date(sent['date'] * 1000) : new Date();
  return {
    id: typeof sent['message_id'] === 'number' ? sent['message_id'] : 0,
    appid,
    message: m.message,
    title,
    priority: m.priority ?? 0,
    ...(m.extras ? { extras: m.extras } : {}),
    date: date.toISOString(),
  };
}

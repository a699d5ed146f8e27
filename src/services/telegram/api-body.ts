// The parameters of one Bot API call as a client sent them (docs/protocols/telegram-bot-api.md §1:
// query string, JSON, form or multipart), read where the relay needs them (the chat a message goes
// to, a long poll's timeout) as Telegram reads them (the query string first, the first of two equal
// names), and written back in the same encoding when it changes one. Bodies are passed on byte for
// byte unless a parameter had to change. Framework-free.
import { DuplicateKey, JsonError, parseJson } from '../../infra/http/strict-json.ts';

export type Encoding = 'json' | 'form' | 'multipart' | 'none';

/** The call's body is not what its content type says. */
export class BadBody extends Error {
  override name = 'BadBody';
}

/** null: a content type the Bot API does not take (415). */
export function encodingOf(contentType: string | undefined, hasBody: boolean): Encoding | null {
  const t = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!hasBody && t === '') return 'none';
  if (t === 'application/json') return 'json';
  if (t === 'application/x-www-form-urlencoded') return 'form';
  if (t === 'multipart/form-data') return 'multipart';
  // An empty POST without a type is a call without parameters (getMe, deleteWebhook).
  if (t === '') return 'none';
  return null;
}

export type Params = Record<string, unknown>;

// As deep as Telegram's own reader follows a JSON value.
const JSON_DEPTH = 100;

/**
 * name=value pairs of a query string or form body as Telegram's server decodes them
 * (docs/protocols/telegram-bot-api.md §1): split on '&' then the first '=', '+' is a space, %XX a
 * byte, anything else literal, then UTF-8. `fatal`: text that is not UTF-8 throws BadBody instead of
 * becoming U+FFFD (Telegram keeps the bytes: a replacement would be a second reading).
 */
export function formPairs(raw: Buffer | string, fatal = false): [string, string][] {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw;
  const text = new TextDecoder('utf-8', { fatal });
  const decode = (b: Buffer): string => {
    const out = Buffer.alloc(b.length);
    let n = 0;
    for (let i = 0; i < b.length; i++) {
      const c = b[i]!;
      const hex = c === 0x25 && i + 2 < b.length ? b.subarray(i + 1, i + 3).toString('latin1') : '';
      if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
        out[n++] = Number.parseInt(hex, 16);
        i += 2;
      } else out[n++] = c === 0x2b ? 0x20 : c;
    }
    try {
      return text.decode(out.subarray(0, n));
    } catch {
      throw new BadBody('a parameter is not UTF-8 text');
    }
  };
  const pairs: [string, string][] = [];
  for (let start = 0; start <= bytes.length; ) {
    let end = bytes.indexOf(0x26, start);
    if (end === -1) end = bytes.length;
    const kv = bytes.subarray(start, end);
    start = end + 1;
    if (kv.length === 0) continue;
    const eq = kv.indexOf(0x3d);
    pairs.push(eq === -1 ? [decode(kv), ''] : [decode(kv.subarray(0, eq)), decode(kv.subarray(eq + 1))]);
  }
  return pairs;
}

/**
 * A JSON or form body's parameters in order (a JSON body must be an object). `strict`: a duplicate
 * key at any depth and text that is not UTF-8 throw BadBody; otherwise the first of two wins, as
 * Telegram reads them.
 */
export function bodyEntries(enc: Encoding, body: Buffer | null, strict: boolean): [string, unknown][] {
  if (!body || body.length === 0 || enc === 'none' || enc === 'multipart') return [];
  if (enc === 'form') return formPairs(body, strict);
  let data: unknown;
  try {
    const text = new TextDecoder('utf-8', { fatal: strict }).decode(body);
    data = parseJson(text, { duplicates: strict ? 'refuse' : 'first', maxDepth: JSON_DEPTH });
  } catch (err) {
    if (err instanceof DuplicateKey) throw new BadBody(err.message);
    throw new BadBody(err instanceof JsonError ? err.message : 'the JSON body is not UTF-8 text');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new BadBody('a JSON body must be an object of parameters');
  return Object.entries(data);
}

/** A JSON or form body's parameters as Telegram reads them: the first of two equal names wins. */
export function bodyParams(enc: Encoding, body: Buffer | null): Params {
  const out: Params = {};
  for (const [k, v] of bodyEntries(enc, body, false)) if (!(k in out)) out[k] = v;
  return out;
}

/** The body for `params` in encoding `enc` (JSON or form: what the client used). */
export function encodeBody(enc: 'json' | 'form', params: Params): Buffer {
  if (enc === 'json') return Buffer.from(JSON.stringify(params));
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    // Object-valued parameters travel as JSON text in form encodings (§1).
    form.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return Buffer.from(form.toString());
}

/** One parameter where Telegram looks first, the query string, else the body; undefined when neither has it. */
export function param(name: string, body: Params, query: URLSearchParams): unknown {
  return query.get(name) ?? body[name];
}

/** A chat reference as Telegram reads it: a number, numeric text or @username. */
export function chatRef(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v !== 'string') return null;
  const s = v.trim();
  return /^-?\d{1,20}$/.test(s) || /^@[A-Za-z][A-Za-z0-9_]{2,63}$/.test(s) ? s : null;
}

/**
 * A long poll's timeout in seconds (getUpdates `timeout`, 0 when absent: a short poll; read as
 * Telegram does, the query first and leading digits), and the call rewritten, wherever it gives a
 * timeout, when it asked for longer than `maxSec`.
 */
export function longPollTimeout(
  enc: Encoding,
  body: Params,
  query: URLSearchParams,
  maxSec: number,
): { sec: number; body?: Params; query?: URLSearchParams } {
  const raw = param('timeout', body, query);
  const n =
    typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(/^\d{1,9}/.exec(raw)?.[0] ?? 0) : 0;
  if (!(n > maxSec)) return { sec: Math.max(0, Math.floor(n)) };
  const out: { sec: number; body?: Params; query?: URLSearchParams } = { sec: maxSec };
  if (body['timeout'] !== undefined && enc !== 'multipart')
    out.body = { ...body, timeout: enc === 'json' ? maxSec : String(maxSec) };
  if (query.has('timeout') || !out.body) {
    out.query = new URLSearchParams(query);
    out.query.set('timeout', String(maxSec));
  }
  return out;
}

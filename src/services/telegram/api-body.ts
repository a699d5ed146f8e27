// The parameters of one Bot API call as a client sent them (docs/protocols/telegram-bot-api.md §1:
// query string, JSON, form or multipart), read where the relay needs them (the chat a message goes
// to, a long poll's timeout) and written back in the same encoding when it changes one. Bodies are
// passed on byte for byte unless a parameter had to change. Framework-free.

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

/** A JSON or form body's parameters (a JSON body must be an object). */
export function bodyParams(enc: Encoding, body: Buffer | null): Params {
  if (!body || body.length === 0 || enc === 'none' || enc === 'multipart') return {};
  const text = body.toString('utf8');
  if (enc === 'form') return Object.fromEntries(new URLSearchParams(text));
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new BadBody('malformed JSON body');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new BadBody('a JSON body must be an object of parameters');
  return data as Params;
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

/** One parameter from the body, else from the query string; undefined when neither has it. */
export function param(name: string, body: Params, query: URLSearchParams): unknown {
  return body[name] !== undefined ? body[name] : (query.get(name) ?? undefined);
}

/** A chat reference as Telegram reads it: a number, numeric text or @username. */
export function chatRef(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v !== 'string') return null;
  const s = v.trim();
  return /^-?\d{1,20}$/.test(s) || /^@[A-Za-z][A-Za-z0-9_]{2,63}$/.test(s) ? s : null;
}

/**
 * A long poll's timeout in seconds (getUpdates `timeout`, 0 when absent: a short poll), and the
 * call rewritten when it asked for longer than `maxSec`.
 */
export function longPollTimeout(
  enc: Encoding,
  body: Params,
  query: URLSearchParams,
  maxSec: number,
): { sec: number; body?: Params; query?: URLSearchParams } {
  const raw = param('timeout', body, query);
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : 0;
  if (n <= maxSec) return { sec: Math.max(0, Math.floor(n)) };
  if (body['timeout'] !== undefined && enc !== 'multipart')
    return { sec: maxSec, body: { ...body, timeout: enc === 'json' ? maxSec : String(maxSec) } };
  const q = new URLSearchParams(query);
  q.set('timeout', String(maxSec));
  return { sec: maxSec, query: q };
}

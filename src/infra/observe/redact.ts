// The one redaction function for everything that reaches a log: request URLs (parsed or raw),
// upstream URLs, redirect targets, error messages and causes. Secrets have known shapes (Telegram
// bot tokens, signed query strings, user:password@, Bearer, the proxy's /t/<secret>/ prefix, tus
// upload ids, Telegram recipient tokens, delete links) plus the
// configured secret values themselves, wherever in the text they appear.

const SECRET_NAME =
  /(sig|signature|token|secret|password|passwd|credential|auth|apikey|api_key|key-pair|x-amz-security)/i;
const BOT_PATH = /\/bot\d+:[A-Za-z0-9_-]+/g;
// A bare token, also glued to the word "bot" as in a Bot API path quoted without its slash
// ("bot123:AA..."), where no word boundary stands before the digits.
const BOT_TOKEN = /(?:\b|(?<=bot))\d{5,}:[A-Za-z0-9_-]{20,}/gi;
// A Telegram recipient token (services/telegram/recipients.ts), wherever it appears: in
// /telegram/r/<token>, in a bot path (/bottgr_...), an ntfy topic, a Gotify ?token=, a message;
// also with any of its characters percent-encoded (the router decodes them back to the token).
const RECIPIENT = /(?:t|%74)(?:g|%67)(?:r|%72)(?:_|%5f)(?:[A-Za-z0-9_-]|%[0-9a-f]{2}){16,}/gi;
const USERINFO = /(\/\/|^|\/)([^/@\s:]*):([^/@\s]+)@/g;
// name=value in a query string or free text ("...?X-Amz-Signature=..", "failed: token=..").
const PARAM = /(^|[?&;\s])([^=&?#\s"';]+)=([^&#\s"';]*)/g;
// "name":"value" inside JSON quoted in a message (a thrown plain object, an upstream error body).
const JSON_FIELD = /"([^"\\]{1,64})"(\s*:\s*)"((?:[^"\\]|\\.)*)"/g;
const BEARER = /\b(Bearer)\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/gi;
// The proxy's access prefix: /t/<secret>/ at the start of a raw path, or under /proxy.
const PROXY_PREFIX = /(^|\/proxy)\/t\/[^/?#\s"]+/g;
// A resumable upload's URL is its capability (continue, end, read the result): /api/upload/<id>.
const UPLOAD_ID = /(\/api\/upload\/)[0-9a-f]{32}\b/g;
// A delete link carries the owner token: /delete/<keys>/<token>.
const DELETE_LINK = /(\/delete\/[^/?#\s"]+\/)[^/?#\s"]+/g;
// The admin's single sign-on callback carries the authorization code and state in its query.
const OIDC_CALLBACK = /(\/admin\/oidc\/callback\?)[^\s"#]+/g;
// Cheap pre-check: text without any of these characters holds none of the shapes above.
const MAYBE = /[:=@/%]|bearer|tgr_/i;

const R = '[redacted]';
// Each value with the number of holders that registered it: a process may build several servers
// (tests, in-process restarts), and a value stays masked while any of them holds it.
const literals = new Map<string, number>();

/**
 * Registers configured secret values (proxy prefix, admin tokens...) to be masked wherever they
 * appear, until the returned release is called (a server calls it last when it closes).
 */
export function protectSecrets(values: Iterable<string>): () => void {
  // Short values would mask ordinary words; the schema asks 8+ characters of real secrets.
  const held = [...new Set(values)].filter((v) => v.length >= 8);
  for (const v of held) literals.set(v, (literals.get(v) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const v of held) {
      const n = (literals.get(v) ?? 1) - 1;
      if (n > 0) literals.set(v, n);
      else literals.delete(v);
    }
  };
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Masks every secret-shaped part of `s`; cheap enough to run on every logged string. */
export function redact(s: string): string {
  let out = s;
  for (const v of literals.keys()) if (out.includes(v)) out = out.split(v).join(R);
  if (!MAYBE.test(out)) return out;
  return out
    .replace(BOT_PATH, `/bot${R}`)
    .replace(BOT_TOKEN, R)
    .replace(RECIPIENT, `tgr_${R}`)
    .replace(USERINFO, `$1$2:${R}@`)
    .replace(PROXY_PREFIX, `$1/t/${R}`)
    .replace(UPLOAD_ID, `$1${R}`)
    .replace(DELETE_LINK, `$1${R}`)
    .replace(OIDC_CALLBACK, `$1${R}`)
    .replace(PARAM, (all, lead: string, name: string) =>
      SECRET_NAME.test(decodeSafe(name)) ? `${lead}${name}=${R}` : all,
    )
    .replace(JSON_FIELD, (all, name: string, colon: string) =>
      SECRET_NAME.test(name) ? `"${name}"${colon}"${R}"` : all,
    )
    .replace(BEARER, `$1 ${R}`);
}

/** True for a field name that holds a credential (apiKey, token, password, X-Amz-Signature...). */
export const isSecretName = (name: string): boolean => SECRET_NAME.test(name);

const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/** Longest text tried as JSON: an upstream error body is small; a bigger one stays text. */
const MAX_JSON_TEXT = 16 * 1024;

/**
 * A text that is a whole JSON object or array (an upstream error body, a thrown `JSON.stringify`)
 * as that structure, its credential-named keys masked and its strings redacted; undefined for any
 * other text. A log line then carries the fields, not JSON quoted inside the JSON line.
 */
export function jsonText(s: string): Record<string, unknown> | unknown[] | undefined {
  if (s.length > MAX_JSON_TEXT || !/^\s*[[{]/.test(s)) return undefined;
  try {
    const v = JSON.parse(s) as unknown;
    return v !== null && typeof v === 'object' ? (maskNested(v, 6) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A parsed body with secrets masked by key name and by shape, to `depth` levels. */
function maskNested(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return redact(v);
  if (v === null || typeof v !== 'object') return v;
  if (depth <= 0) return Array.isArray(v) ? '[array]' : '[object]';
  if (Array.isArray(v)) return v.slice(0, 50).map((x) => maskNested(x, depth - 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, 50))
    out[k] = isSecretName(k) && x !== null && typeof x !== 'object' ? R : maskNested(x, depth - 1);
  return out;
}

/**
 * The string fields of a log object (and of plain objects and arrays under it, two levels down)
 * with secrets masked, and a field holding JSON text as the structure it holds; the object itself
 * when nothing changed. Requests, replies and errors are
 * left to their serializers.
 */
export function redactFields<T>(value: T, depth = 2): T {
  if (typeof value === 'string') return (jsonText(value) ?? redact(value)) as T;
  if (depth < 0) return value;
  if (Array.isArray(value)) {
    const out = value.map((v) => redactFields(v, depth - 1));
    return (out.some((v, i) => v !== value[i]) ? out : value) as T;
  }
  if (!isPlain(value)) return value;
  let copy: Record<string, unknown> | null = null;
  for (const k of Object.keys(value)) {
    const v = value[k];
    const r = redactFields(v, depth - 1);
    if (r === v) continue;
    copy ??= { ...value };
    copy[k] = r;
  }
  return (copy ?? value) as T;
}

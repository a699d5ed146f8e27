// Conditional requests (RFC 9110 section 13), once for every utility: entity-tag lists, HTTP-dates,
// and the evaluation order of 13.2.2 (If-Match, If-Unmodified-Since, If-None-Match,
// If-Modified-Since; If-Range lives beside Range in range.ts). Not the `fresh` package: it covers
// only If-None-Match and If-Modified-Since, re-reads the response headers on every call, and treats
// a request's `Cache-Control: no-cache` as "changed", a cache's rule that an origin does not apply.

/** The validators of the selected representation (RFC 9110 8.8). */
export interface Validators {
  /** Its entity tag as sent in ETag (`"x"` or `W/"x"`), or null without one. */
  etag: string | null;
  /** Its last modification in ms since the epoch (compared to the second), or null without one. */
  lastModified: number | null;
  /**
   * Tags of the same resource's other representations that If-None-Match may name for a 304: a
   * file's identity and compressed forms differ only in coding, which a weak match accepts.
   */
  sameAs?: readonly string[];
}

/**
 * The validators in a response's own ETag and Last-Modified fields (ours, or an upstream's as a
 * cache stored them; read leniently, since the sender's form is not ours to fix).
 */
export function validatorsOf(h: {
  etag?: string | undefined;
  'last-modified'?: string | undefined;
}): Validators {
  const lm = h['last-modified'];
  const ms = lm === undefined ? Number.NaN : Date.parse(lm);
  return { etag: h.etag ?? null, lastModified: Number.isNaN(ms) ? null : ms };
}

/** The request fields this module reads (Node's IncomingHttpHeaders fits). */
export interface ConditionalHeaders {
  'if-match'?: string | undefined;
  'if-none-match'?: string | undefined;
  'if-modified-since'?: string | undefined;
  'if-unmodified-since'?: string | undefined;
  'if-range'?: string | undefined;
  range?: string | undefined;
}

/** What the preconditions decide: go on, answer 304 Not Modified, or answer 412 Precondition Failed. */
export type Precondition = 'pass' | 'not-modified' | 'failed';

export interface EvaluateOptions {
  /**
   * Evaluated by a cache rather than the origin: If-Match and If-Unmodified-Since are left alone
   * (RFC 9110 13.1.1 and 13.1.4: "A recipient cache or intermediary MAY ignore" them).
   */
  cache?: boolean;
}

const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/**
 * Whether an entity-tag list (If-Match, If-None-Match) names `etag`: weak comparison for
 * If-None-Match, strong for If-Match (RFC 9110 8.8.3.2). `*` is not handled here. Tags are read by
 * the grammar (a quoted tag may hold a comma); a member that is not a valid entity-tag matches nothing.
 */
export function listNames(list: string, etag: string, weak: boolean): boolean {
  if (!weak && etag.startsWith('W/')) return false;
  const want = opaque(etag);
  const n = list.length;
  let i = 0;
  while (i < n) {
    const c = list.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x2c) {
      i++;
      continue;
    }
    let isWeak = false;
    if (c === 0x57 && list.charCodeAt(i + 1) === 0x2f) {
      isWeak = true;
      i += 2;
    }
    if (list.charCodeAt(i) !== 0x22) {
      const comma = list.indexOf(',', i);
      i = comma === -1 ? n : comma + 1;
      continue;
    }
    const close = list.indexOf('"', i + 1);
    if (close === -1) return false;
    if ((weak || !isWeak) && close + 1 - i === want.length && list.startsWith(want, i)) return true;
    i = close + 1;
  }
  return false;
}

/** True when the field value is `*` (with optional whitespace). */
const isStar = (v: string) => v.trim() === '*';

/** Whether an entity-tag list field (If-Match, If-None-Match) matches the representation. */
function fieldMatches(field: string, v: Validators, weak: boolean): boolean {
  if (isStar(field)) return true;
  if (v.etag !== null && listNames(field, v.etag, weak)) return true;
  return weak && v.sameAs?.some((t) => listNames(field, t, true)) === true;
}

const MONTHS = 'JanFebMarAprMayJunJulAugSepOctNovDec';
const IMF = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d\d) ([A-Z][a-z]{2}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/;
const RFC850 =
  /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d\d)-([A-Z][a-z]{2})-(\d\d) (\d\d):(\d\d):(\d\d) GMT$/;
const ASCTIME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) (\d{4})$/;

function utc(y: number, mon: string, d: number, h: number, mi: number, s: number): number | null {
  const m = MONTHS.indexOf(mon);
  if (m < 0 || m % 3 !== 0 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return null;
  return Date.UTC(y, m / 3, d, h, mi, Math.min(s, 59));
}

/**
 * An HTTP-date in ms, or null when the value is not one (RFC 9110 5.6.7: IMF-fixdate, and the
 * obsolete RFC 850 and asctime forms a recipient must still accept). Stricter than Date.parse,
 * which reads "0" or "2025" as dates: a field that is not a date is ignored, not guessed at.
 */
export function parseHttpDate(value: string): number | null {
  let m = IMF.exec(value);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC850.exec(value);
  if (m) {
    // A two-digit year more than 50 years ahead is in the past century (RFC 9110 5.6.7).
    const now = new Date().getUTCFullYear();
    let y = Math.floor(now / 100) * 100 + Number(m[3]);
    if (y > now + 50) y -= 100;
    return utc(y, m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME.exec(value);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), Number(m[3]), Number(m[4]), Number(m[5]));
  return null;
}

/** Seconds since the epoch: HTTP-dates have no finer precision. */
const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * The preconditions of a request on an existing representation, in the order of RFC 9110 13.2.2.
 * `method` is the request's (304 is for GET and HEAD; other methods get 412 where GET gets 304).
 */
export function evaluate(
  method: string,
  h: ConditionalHeaders,
  v: Validators,
  o: EvaluateOptions = {},
): Precondition {
  if (!o.cache) {
    const im = h['if-match'];
    if (im !== undefined) {
      // Step 1: strong comparison; `*` holds for any current representation (13.1.1).
      if (!fieldMatches(im, v, false)) return 'failed';
    } else {
      // Step 2: ignored without a valid date or a modification date (13.1.4).
      const ius = h['if-unmodified-since'];
      const since = ius === undefined || v.lastModified === null ? null : parseHttpDate(ius);
      if (since !== null && seconds(v.lastModified!) > seconds(since)) return 'failed';
    }
  }
  const safe = method === 'GET' || method === 'HEAD';
  const inm = h['if-none-match'];
  if (inm !== undefined) {
    // Step 3: weak comparison (13.1.2).
    if (fieldMatches(inm, v, true)) return safe ? 'not-modified' : 'failed';
    return 'pass';
  }
  // Step 4: only GET and HEAD, only without If-None-Match, only with a valid date (13.1.3).
  const ims = h['if-modified-since'];
  if (ims === undefined || !safe || v.lastModified === null) return 'pass';
  const since = parseHttpDate(ims);
  return since !== null && seconds(v.lastModified) <= seconds(since) ? 'not-modified' : 'pass';
}

/**
 * If-Range (RFC 9110 13.1.5): true when the Range of the request applies. An entity tag must match
 * strongly (a weak one never does); a date must equal Last-Modified exactly; anything else is false.
 */
export function ifRangeHolds(ifRange: string | undefined, v: Validators): boolean {
  if (ifRange === undefined) return true;
  const s = ifRange.trim();
  if (s.startsWith('"') || s.startsWith('W/')) {
    return v.etag !== null && !s.startsWith('W/') && !v.etag.startsWith('W/') && s === v.etag;
  }
  const date = parseHttpDate(s);
  return date !== null && v.lastModified !== null && seconds(date) === seconds(v.lastModified);
}

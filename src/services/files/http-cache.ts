// Conditional and range requests for downloads (RFC 9110 sections 13 and 14): ETag/If-None-Match,
// If-Modified-Since, If-Range and a single byte range; multiple ranges are answered with the whole.
import { requestNotModified } from '../../infra/http/prepared-response.ts';

export type RangeResult =
  | { kind: 'none' }
  | { kind: 'range'; start: number; end: number }
  | { kind: 'unsatisfiable' };

/** Parses `Range: bytes=a-b | a- | -n` against a representation of `size` bytes. */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (!header) return { kind: 'none' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  // Other units, several ranges or garbage: ignore the header and send the whole (allowed by 14.2).
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'none' };
  const [first, last] = [m[1] ?? '', m[2] ?? ''];
  if (first === '') {
    const n = Number(last);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return { kind: 'none' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end };
}

/** If-None-Match (weak comparison) or, without it, If-Modified-Since: true means answer 304. */
export function notModified(
  h: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined },
  etags: string[],
  lastModified: Date,
): boolean {
  return requestNotModified(h, etags, lastModified.getTime());
}

/** If-Range: the range applies only when the validator still matches (strong ETag or exact date). */
export function rangeStillValid(ifRange: string | undefined, etag: string, lastModified: Date): boolean {
  if (ifRange === undefined) return true;
  const v = ifRange.trim();
  if (v.startsWith('"')) return v === etag;
  if (v.startsWith('W/')) return false;
  const t = Date.parse(v);
  return !Number.isNaN(t) && Math.floor(t / 1000) === Math.floor(lastModified.getTime() / 1000);
}

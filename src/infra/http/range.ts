// Range requests (RFC 9110 section 14), once for every utility that sends byte ranges. Written here
// rather than taken from `range-parser`: that package answers `bytes=-500` on a 100-byte
// representation as unsatisfiable, where 14.1.1 says the whole representation is sent, and keeps
// the unit untrimmed and case-sensitive.
import { type ConditionalHeaders, ifRangeHolds, type Validators } from './conditional.ts';

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

/**
 * How to answer: the whole representation (200), one range (206), several (206
 * multipart/byteranges, or the whole for a caller that does not build those), or 416.
 */
export type RangeAnswer =
  | { kind: 'whole' }
  | { kind: 'single'; start: number; end: number }
  | { kind: 'multiple'; ranges: ByteRange[] }
  | { kind: 'unsatisfiable' };

const WHOLE: RangeAnswer = { kind: 'whole' };
const UNSATISFIABLE: RangeAnswer = { kind: 'unsatisfiable' };
/** More ranges than this after merging: answered whole, as 14.2 lets a server do with many small ones. */
const MAX_RANGES = 16;
const DIGITS = /^\d+$/;

/**
 * A Range field value against a representation of `size` bytes. Another unit, or a value that is
 * not a valid ranges-specifier (`bytes=5-3`: a last-pos below its first-pos makes the whole field
 * invalid, 14.1.1), is ignored: the whole is sent (14.2, "MAY ignore"). Ranges that overlap or
 * touch are merged, in ascending order. An empty representation has no range to send: a suffix
 * range gets the (empty) whole, any other range 416.
 */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return WHOLE;
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes') return WHOLE;
  const ranges: ByteRange[] = [];
  let suffixOnly = true;
  for (const part of header.slice(eq + 1).split(',')) {
    const spec = part.trim();
    if (spec === '') continue; // empty list elements are allowed and ignored (RFC 9110 5.6.1)
    const dash = spec.indexOf('-');
    if (dash < 0) return WHOLE;
    const first = spec.slice(0, dash).trim();
    const last = spec.slice(dash + 1).trim();
    if (first === '') {
      if (!DIGITS.test(last)) return WHOLE;
      const n = Number(last);
      // A suffix longer than the representation selects all of it; a zero one selects nothing.
      if (n > 0 && size > 0) ranges.push({ start: Math.max(0, size - n), end: size - 1 });
      continue;
    }
    suffixOnly = false;
    if (!DIGITS.test(first) || (last !== '' && !DIGITS.test(last))) return WHOLE;
    const start = Number(first);
    if (last !== '' && Number(last) < start) return WHOLE;
    if (start < size) ranges.push({ start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) });
  }
  if (ranges.length === 0) {
    // `bytes=` or `bytes=,`: no range-spec at all is not a valid ranges-specifier.
    if (!/\d/.test(header.slice(eq + 1))) return WHOLE;
    return size === 0 && suffixOnly ? WHOLE : UNSATISFIABLE;
  }
  if (ranges.length === 1) return { kind: 'single', start: ranges[0]!.start, end: ranges[0]!.end };
  const merged = merge(ranges);
  if (merged.length === 1) return { kind: 'single', start: merged[0]!.start, end: merged[0]!.end };
  return merged.length > MAX_RANGES ? WHOLE : { kind: 'multiple', ranges: merged };
}

/** Overlapping and adjacent ranges joined, in ascending order (a server MAY coalesce, 14.2). */
function merge(ranges: ByteRange[]): ByteRange[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  const out: ByteRange[] = [{ ...sorted[0]! }];
  for (const r of sorted.slice(1)) {
    const last = out[out.length - 1]!;
    if (r.start <= last.end + 1) last.end = Math.max(last.end, r.end);
    else out.push({ ...r });
  }
  return out;
}

/**
 * The Range of a request as it applies: only GET has range handling (14.2: a server MUST ignore
 * Range for other methods, HEAD included), and only while If-Range holds (13.1.5).
 */
export function rangeOf(method: string, h: ConditionalHeaders, v: Validators, size: number): RangeAnswer {
  if (method !== 'GET' || h.range === undefined) return WHOLE;
  if (!ifRangeHolds(h['if-range'], v)) return WHOLE;
  return parseRange(h.range, size);
}

/** Content-Range of a 206 part, or of a 416 when `r` is null (RFC 9110 14.4). */
export function contentRange(r: ByteRange | null, size: number): string {
  return r ? `bytes ${r.start}-${r.end}/${size}` : `bytes */${size}`;
}

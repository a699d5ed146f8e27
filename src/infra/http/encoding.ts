// Accept-Encoding (RFC 9110 12.5.3), once for every utility: which of the codings a server can send
// the client takes, by q-value, ties going to the server's order. Parsed by `negotiator` (jshttp,
// under Express): case-insensitive codings, q=0 refusals, and `*` standing only for the codings the
// field does not name. Not `@fastify/accept-negotiator`: it reads `br;q=0, *` as "br" and `GZIP` as
// nothing. Results are memoised per field value: clients send a handful of distinct values.
import Negotiator from 'negotiator';

/** Distinct field values remembered per offer (then forgotten at once: a flood of odd values cannot grow it). */
const MEMO = 256;
const memos = new Map<string, Map<string, string | null>>();

function pick(header: string, offered: readonly string[]): string | null {
  // "x-gzip" is gzip (RFC 9110 8.4.1.3: a recipient SHOULD consider them equivalent).
  const value = /x-gzip/i.test(header) ? header.replace(/\bx-gzip\b/gi, 'gzip') : header;
  const n = new Negotiator({ headers: { 'accept-encoding': value } });
  const list = offered as string[];
  return n.encodings(list, { preferred: list })[0] ?? null;
}

/**
 * The coding of `offered` (most preferred first) to send for this Accept-Encoding, or null for
 * identity: no field, nothing acceptable, or only refusals (the representation is then sent
 * unencoded rather than refused with 406, which 12.5.3 allows).
 */
export function negotiateEncoding(
  header: string | string[] | undefined,
  offered: readonly string[],
): string | null {
  if (header === undefined) return null;
  const h = Array.isArray(header) ? header.join(',') : header;
  if (h === '') return null;
  const offer = offered.length === 1 ? offered[0]! : offered.join(',');
  let memo = memos.get(offer);
  if (!memo) {
    memo = new Map();
    if (memos.size < 64) memos.set(offer, memo);
  }
  const hit = memo.get(h);
  if (hit !== undefined) return hit;
  const out = pick(h, offered);
  if (memo.size >= MEMO) memo.clear();
  if (h.length <= 256) memo.set(h, out);
  return out;
}

/** True when this Accept-Encoding takes `coding` (q > 0, by name or through `*`). */
export function acceptsEncoding(header: string | string[] | undefined, coding: string): boolean {
  return negotiateEncoding(header, [coding]) === coding;
}

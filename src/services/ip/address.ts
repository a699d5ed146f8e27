// ?ip=<address>: the one address a caller asks about, in the form the answer shows. Accepts what
// people paste (IPv4 dotted quads, IPv6 in any case or expansion, [brackets], IPv4-mapped IPv6)
// and refuses the rest with the reason, never a guess: no zone ids, no octal/hex/short IPv4.
import { isIP } from 'node:net';

/** Longest text looked at: the longest IPv6 form (45) with brackets, and room for spaces. */
const MAX_LENGTH = 64;

export type Parsed = { ok: true; ip: string } | { ok: false; reason: string };

export function parseAddress(raw: string): Parsed {
  if (raw.length > MAX_LENGTH) return { ok: false, reason: `ip is longer than ${MAX_LENGTH} characters` };
  let text = raw.trim();
  if (text === '') return { ok: false, reason: 'ip is empty' };
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (text.includes('%')) return { ok: false, reason: 'ip must not carry a zone id (%...)' };
  const v = isIP(text);
  if (v === 4) return { ok: true, ip: text };
  if (v !== 6) return { ok: false, reason: 'ip is not an IPv4 or IPv6 address' };
  // IPv4-mapped IPv6 names an IPv4 host, as the caller's own address is shown (::ffff:1.2.3.4 -> 1.2.3.4).
  const mapped = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(text);
  if (mapped && isIP(mapped[1]!) === 4) return { ok: true, ip: mapped[1]! };
  // The WHATWG URL parser writes IPv6 in RFC 5952 form: lower case, longest zero run compressed.
  return { ok: true, ip: new URL(`http://[${text}]/`).hostname.slice(1, -1) };
}

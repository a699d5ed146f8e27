// Who is calling: the socket peer, unless that peer is a trusted proxy; then the forwarding header
// is walked right to left and the first untrusted hop wins. The leftmost entry (echoip/ipify style)
// is whatever the client typed, so it is never believed. Malformed entries stop the walk.
import { BlockList, isIPv4, isIPv6 } from 'node:net';

const KEYWORDS: Record<string, [string, number, 'ipv4' | 'ipv6'][]> = {
  loopback: [
    ['127.0.0.0', 8, 'ipv4'],
    ['::1', 128, 'ipv6'],
  ],
  linklocal: [
    ['169.254.0.0', 16, 'ipv4'],
    ['fe80::', 10, 'ipv6'],
  ],
  uniquelocal: [['fc00::', 7, 'ipv6']],
  private: [
    ['10.0.0.0', 8, 'ipv4'],
    ['172.16.0.0', 12, 'ipv4'],
    ['192.168.0.0', 16, 'ipv4'],
    ['fc00::', 7, 'ipv6'],
  ],
};

/** Builds the trusted-proxy set from config items (IPs, CIDRs, keywords). */
export function trustList(items: readonly string[]): BlockList | null {
  if (items.length === 0) return null;
  const bl = new BlockList();
  for (const item of items) {
    const kw = Object.hasOwn(KEYWORDS, item) ? KEYWORDS[item] : undefined;
    if (kw) {
      for (const [net, bits, type] of kw) bl.addSubnet(net, bits, type);
      continue;
    }
    const [addr = '', bits] = item.split('/');
    const type = isIPv4(addr) ? 'ipv4' : 'ipv6';
    const canon = canonicalIp(addr) ?? addr;
    const ctype = isIPv4(canon) ? 'ipv4' : type;
    if (bits === undefined) bl.addAddress(canon, ctype);
    else bl.addSubnet(canon, Number(bits), ctype);
  }
  return bl;
}

/**
 * Canonical text of an address: IPv4 dotted quad (IPv4-mapped IPv6 unwrapped), IPv6 in RFC 5952
 * short form (lower case, no leading zeros, the longest zero run as ::). Null if not an address.
 */
export function canonicalIp(input: string): string | null {
  let s = input.trim();
  const pct = s.indexOf('%');
  if (pct !== -1) s = s.slice(0, pct); // zone ids are local to the host that saw them
  if (isIPv4(s)) return s;
  // Every IPv4 caller of a dual-stack listener looks like this: answered without the IPv6 parse.
  if (s.length > 7 && s.charCodeAt(0) === 58 && s.slice(0, 7).toLowerCase() === '::ffff:') {
    const v4 = s.slice(7);
    if (isIPv4(v4)) return v4;
  }
  if (!isIPv6(s)) return null;
  const groups = expandV6(s.toLowerCase());
  if (!groups) return null;
  // ::ffff:a.b.c.d (IPv4-mapped) is an IPv4 caller on a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const hi = groups[6] ?? 0;
    const lo = groups[7] ?? 0;
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return formatV6(groups);
}

/** RFC 5952 text of eight groups: lower case, no leading zeros, the longest zero run as ::. */
function formatV6(groups: readonly number[]): string {
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [bestAt, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt === -1) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

/**
 * The client key every limit counts under: an IPv4 address alone, an IPv6 address by its network
 * (`v6Bits`, /64 by default: one subscriber routinely holds a whole /64, so counting single v6
 * addresses would give one client 2^64 shares). Unparseable peers share one key.
 */
export function addressGroup(peer: string | undefined, v6Bits = 64): string {
  const ip = canonicalIp(peer ?? '');
  if (ip === null) return 'unknown';
  if (isIPv4(ip) || v6Bits >= 128) return ip;
  const g = expandV6(ip) ?? [];
  const net: number[] = [];
  for (let i = 0, bits = v6Bits; i < 8; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : bits > 0 ? (0xffff << (16 - bits)) & 0xffff : 0;
    net.push((g[i] ?? 0) & mask);
  }
  return `${formatV6(net)}/${v6Bits}`;
}

const hexDigit = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1);

/**
 * The eight 16-bit groups of a lower-case IPv6 address (dotted tail allowed); null if malformed.
 * One pass over the characters: it runs for every IPv6 and IPv4-mapped caller.
 */
export function expandV6(s: string): number[] | null {
  const n = s.length;
  const head: number[] = [];
  let tail: number[] | null = null; // the groups after '::'
  let cur = head;
  let i = 0;
  if (n >= 2 && s.charCodeAt(0) === 58 && s.charCodeAt(1) === 58) {
    tail = cur = [];
    i = 2;
  }
  while (i < n) {
    let v = 0;
    let j = i;
    for (; j < n && j - i < 5; j++) {
      const h = hexDigit(s.charCodeAt(j));
      if (h < 0) break;
      v = v * 16 + h;
    }
    if (j < n && s.charCodeAt(j) === 46) {
      // A dotted IPv4 tail: the last two groups.
      const quad = s.slice(i);
      if (!isIPv4(quad)) return null;
      const o = quad.split('.').map(Number) as [number, number, number, number];
      cur.push((o[0] << 8) | o[1], (o[2] << 8) | o[3]);
      break;
    }
    if (j === i || j - i > 4) return null;
    cur.push(v);
    if (j === n) break;
    if (s.charCodeAt(j) !== 58) return null;
    if (j + 1 < n && s.charCodeAt(j + 1) === 58) {
      if (tail) return null; // a second '::'
      tail = cur = [];
      i = j + 2;
    } else {
      i = j + 1;
      if (i === n) return null; // a trailing single ':'
    }
  }
  if (!tail) return head.length === 8 ? head : null;
  const fill = 8 - head.length - tail.length;
  if (fill < 1) return null; // '::' stands for at least one group
  for (let k = 0; k < fill; k++) head.push(0);
  for (const g of tail) head.push(g);
  return head;
}

/** Strips the port and brackets a forwarding entry may carry: `1.2.3.4:80`, `[::1]:443`, `"[::1]"`. */
function entryAddress(raw: string): string | null {
  let s = raw.trim();
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2) s = s.slice(1, -1);
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end === -1) return null;
    return canonicalIp(s.slice(1, end));
  }
  const colon = s.indexOf(':');
  if (colon !== -1 && colon === s.lastIndexOf(':') && isIPv4(s.slice(0, colon))) s = s.slice(0, colon);
  return canonicalIp(s);
}

/** The `for=` values of RFC 7239 Forwarded headers, in order. */
function forwardedFor(headers: string[]): string[] {
  const out: string[] = [];
  for (const h of headers) {
    for (const element of h.split(',')) {
      let found = '';
      for (const pair of element.split(';')) {
        const eq = pair.indexOf('=');
        if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === 'for') found = pair.slice(eq + 1);
      }
      out.push(found);
    }
  }
  return out;
}

function headerValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

export interface ClientIpOptions {
  trusted: BlockList | null;
  header: 'x-forwarded-for' | 'forwarded';
}

const typeOf = (ip: string) => (isIPv4(ip) ? 'ipv4' : 'ipv6');

/** The caller's address for a request whose socket peer is `peer`. */
export function clientIp(
  peer: string | undefined,
  headers: Record<string, string | string[] | undefined>,
  opts: ClientIpOptions,
): string {
  let current = canonicalIp(peer ?? '') ?? '0.0.0.0';
  const trusted = opts.trusted;
  if (!trusted?.check(current, typeOf(current))) return current;
  const hops =
    opts.header === 'forwarded'
      ? forwardedFor(headerValues(headers['forwarded']))
      : headerValues(headers['x-forwarded-for']).flatMap((h) => h.split(','));
  for (let i = hops.length - 1; i >= 0; i--) {
    const addr = entryAddress(hops[i] ?? '');
    if (addr === null) break;
    current = addr;
    if (!trusted.check(current, typeOf(current))) break;
  }
  return current;
}

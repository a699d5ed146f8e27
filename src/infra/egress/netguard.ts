// Which addresses outbound requests may reach (docs/protocols/reverse-proxy.md §6: public unicast only),
// and the `host=address:port` overrides that are the one way to loopback. Kept free of undici so the config
// schema can validate overrides without loading the HTTP client; infra/egress/client.ts applies both.
import { BlockList, isIP, isIPv4 } from 'node:net';

// Two lists: a BlockList matches IPv4 addresses against IPv4-mapped IPv6 subnets too.
const blocked4 = new BlockList();
const blocked6 = new BlockList();
const V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];
for (const [n, b] of V4) blocked4.addSubnet(n, b, 'ipv4');
for (const [n, b] of V6) blocked6.addSubnet(n, b, 'ipv6');

/** The IPv4 address embedded in an IPv4-mapped, IPv4-compatible or NAT64 IPv6 address, if any. */
function embeddedV4(addr: string): string | null {
  const m = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  if (m) return m[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(addr);
  if (!hex) return null;
  const hi = Number.parseInt(hex[1]!, 16);
  const lo = Number.parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True when `addr` is loopback, private, link-local, CGNAT, multicast, reserved or documentation. */
export function isBlockedAddress(addr: string): boolean {
  if (isIPv4(addr)) return blocked4.check(addr, 'ipv4');
  const v4 = embeddedV4(addr);
  if (v4) return true; // every mapped/NAT64 form is refused: the embedded address is checked too
  return blocked6.check(addr, 'ipv6');
}

export function isLoopback(addr: string): boolean {
  return isIPv4(addr) ? addr.startsWith('127.') : addr === '::1';
}

export interface Override {
  address: string;
  port: number;
}

/** Config item check for `host=address:port` (the address an IP literal). */
export function resolveItem(s: string): string | null {
  const m = /^([a-z0-9.-]+)=(.+):(\d{1,5})$/i.exec(s);
  if (!m) return 'expected host=address:port';
  const addr = m[2]!.replace(/^\[|\]$/g, '');
  if (!isIP(addr)) return 'the address must be an IP literal';
  if (Number(m[3]) < 1 || Number(m[3]) > 65535) return 'bad port';
  return null;
}

/** `host=address:port` entries, like curl --resolve (the port replaces the URL's). */
export function parseResolve(entries: readonly string[]): Map<string, Override> {
  const out = new Map<string, Override>();
  for (const e of entries) {
    const m = /^([^=]+)=(.+):(\d+)$/.exec(e.trim());
    if (!m) continue;
    out.set(m[1]!.toLowerCase(), { address: m[2]!.replace(/^\[|\]$/g, ''), port: Number(m[3]) });
  }
  return out;
}

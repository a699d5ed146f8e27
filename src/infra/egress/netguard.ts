// Which addresses outbound requests may reach (docs/protocols/reverse-proxy.md §6: public unicast only,
// plus the ranges the operator allows: docs/operations.md, "Restrictive networks"), and the `host=address:port`
// overrides. Kept free of undici so the config schema can validate both without loading the HTTP client;
// infra/egress/client.ts applies them.
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

/** The config setting that allows reserved or private ranges, as refusals name it. */
export const ALLOW_SETTING = 'DEVUTIL_EGRESS_ALLOW_CIDRS';

/** Which addresses one outbound client refuses: the reserved and private ranges above, less those allowed. */
export interface AddressPolicy {
  refuses(addr: string): boolean;
}

/**
 * The policy with the operator's allowed ranges (`10.0.0.0/8`, `64:ff9b::/96`, a bare address).
 * An allowed NAT64 or IPv4-mapped address is still refused when the IPv4 address it carries is
 * reserved and not allowed itself: allowing 64:ff9b::/96 must not open 64:ff9b::7f00:1 (127.0.0.1
 * through the translator) or the cloud metadata address.
 */
export function addressPolicy(allowCidrs: readonly string[] = []): AddressPolicy {
  if (allowCidrs.length === 0) return { refuses: isBlockedAddress };
  const allow4 = new BlockList();
  const allow6 = new BlockList();
  for (const c of allowCidrs) {
    const [addr = '', bits] = c.split('/');
    const v4 = isIPv4(addr);
    const list = v4 ? allow4 : allow6;
    if (bits === undefined) list.addAddress(addr, v4 ? 'ipv4' : 'ipv6');
    else list.addSubnet(addr, Number(bits), v4 ? 'ipv4' : 'ipv6');
  }
  const allowed4 = (a: string) => allow4.check(a, 'ipv4');
  return {
    refuses(addr) {
      if (!isBlockedAddress(addr)) return false;
      if (isIPv4(addr)) return !allowed4(addr);
      const v4 = embeddedV4(addr);
      if (v4 === null) return !allow6.check(addr, 'ipv6');
      // A mapped form is the IPv4 host itself; a NAT64 one needs its prefix allowed as well.
      const inner = !isBlockedAddress(v4) || allowed4(v4);
      return /^::ffff:/i.test(addr) ? !allowed4(v4) : !(allow6.check(addr, 'ipv6') && inner);
    },
  };
}

/** Config item check for an allowed range: an IP address or a CIDR. */
export function cidrItem(s: string): string | null {
  const [addr, bits, ...rest] = s.split('/');
  const v = isIP(addr ?? '');
  if (!v || rest.length) return 'expected an IP address or a CIDR such as 10.0.0.0/8 or 64:ff9b::/96';
  if (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (v === 4 ? 32 : 128)))
    return 'bad prefix length';
  return null;
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

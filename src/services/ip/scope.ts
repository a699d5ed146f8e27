// Which kind of address a caller has. Only `public` addresses are looked up in the country and
// network databases: the others belong to no country or network, and saying so is the answer.
// Ranges from the IANA special-purpose registries (RFC 6890 and its updates).
import { BlockList, isIPv4 } from 'node:net';

export type Scope =
  | 'public'
  | 'private'
  | 'shared'
  | 'loopback'
  | 'link-local'
  | 'documentation'
  | 'unspecified'
  | 'multicast'
  | 'reserved';

type Net = [string, number];

const RANGES: [Exclude<Scope, 'public'>, Net[], Net[]][] = [
  // [scope, IPv4 nets, IPv6 nets]
  ['unspecified', [['0.0.0.0', 8]], [['::', 128]]],
  ['loopback', [['127.0.0.0', 8]], [['::1', 128]]],
  [
    'private',
    [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ],
    [['fc00::', 7]], // unique local (RFC 4193)
  ],
  ['shared', [['100.64.0.0', 10]], []], // carrier-grade NAT (RFC 6598)
  ['link-local', [['169.254.0.0', 16]], [['fe80::', 10]]],
  [
    'documentation',
    [
      ['192.0.2.0', 24],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
    ],
    [
      ['2001:db8::', 32],
      ['3fff::', 20], // RFC 9637
    ],
  ],
  ['multicast', [['224.0.0.0', 4]], [['ff00::', 8]]],
  [
    'reserved',
    [
      ['192.0.0.0', 24], // IETF protocol assignments
      ['198.18.0.0', 15], // benchmarking
      ['240.0.0.0', 4], // future use, and the limited broadcast address
    ],
    [
      ['100::', 64], // discard-only
      ['2001:2::', 48], // benchmarking
    ],
  ],
];

const LISTS = RANGES.map(([scope, v4, v6]): [Scope, BlockList] => {
  const bl = new BlockList();
  for (const [net, bits] of v4) bl.addSubnet(net, bits, 'ipv4');
  for (const [net, bits] of v6) bl.addSubnet(net, bits, 'ipv6');
  return [scope, bl];
});

/** The scope of a canonical address (client-ip.ts canonicalIp: IPv4-mapped already unwrapped). */
export function scopeOf(ip: string): Scope {
  const type = isIPv4(ip) ? 'ipv4' : 'ipv6';
  for (const [scope, bl] of LISTS) if (bl.check(ip, type)) return scope;
  return 'public';
}

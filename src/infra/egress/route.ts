// Which upstreams go through the operator's outbound proxy (egress.proxy, else HTTPS_PROXY or
// HTTP_PROXY) and which go direct (egress.noProxy, else NO_PROXY), read the way curl and most tools
// read them: `*` is everything, `example.com` and `.example.com` are that name and every name under
// it, an address or CIDR matches IP targets and overridden addresses, `:port` narrows an entry.
// Free of undici so the config schema can check values without loading the HTTP client.
import { BlockList, isIP, isIPv4 } from 'node:net';

/**
 * A proxy URL as written in config or in HTTPS_PROXY (where `proxy.corp:3128` without a scheme is
 * common): an http(s) URL without a path, normalised to `http://host:port`; null when it is none.
 */
export function normaliseProxyUrl(raw: string): { url: string } | { error: string } {
  const s = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `http://${s}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    return { error: 'expected a proxy URL such as http://user:pass@proxy.example:3128' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return { error: `expected an http:// or https:// proxy (${u.protocol.slice(0, -1)} is not supported)` };
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash)
    return { error: 'a proxy URL has no path, query or fragment' };
  return {
    url: `${u.protocol}//${u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : ''}${u.host}`,
  };
}

/** The proxy as logs and messages may show it: host:port, never its credentials. */
export function proxyHost(proxyUrl: string): string {
  const u = new URL(proxyUrl);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

interface Entry {
  /** A name (matches itself and its subdomains), an address, or null for a CIDR. */
  name: string | null;
  port: number | null;
}

/** Config item check for one NO_PROXY entry (lenient: other programs read the same variable). */
export function noProxyItem(s: string): string | null {
  if (s.includes('/')) {
    const [addr, bits, ...rest] = s.split('/');
    const v = isIP(addr ?? '');
    if (!v || rest.length || !/^\d+$/.test(bits ?? '') || Number(bits) > (v === 4 ? 32 : 128))
      return 'expected a host name, .domain, an address, a CIDR or *';
    return null;
  }
  return /^[\w.*:[\]-]+$/.test(s) ? null : 'expected a host name, .domain, an address, a CIDR or *';
}

const bare = (host: string) =>
  host
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();

/**
 * A matcher for NO_PROXY entries: true when `host` (as in the URL, port `port`) or the address it
 * is overridden to should be reached directly.
 */
export function noProxyMatcher(
  entries: readonly string[],
): (host: string, port: number, address?: string) => boolean {
  if (entries.some((e) => e.trim() === '*')) return () => true;
  const nets4 = new BlockList();
  const nets6 = new BlockList();
  let nets = false;
  const list: Entry[] = [];
  for (const raw of entries) {
    const e = raw.trim().toLowerCase();
    if (e === '') continue;
    if (e.includes('/')) {
      const [addr = '', bits = ''] = e.split('/');
      (isIPv4(addr) ? nets4 : nets6).addSubnet(addr, Number(bits), isIPv4(addr) ? 'ipv4' : 'ipv6');
      nets = true;
      continue;
    }
    // host, host:port, v4:port, [v6], [v6]:port, or a bare v6 address (all colons, no port).
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(e) ?? (isIP(e) ? null : /^([^:]+)(?::(\d+))?$/.exec(e));
    const name = m ? m[1]! : e;
    const port = m?.[2] ? Number(m[2]) : null;
    list.push({ name: isIP(name) ? name : name.replace(/^\*?\./, '').replace(/\.$/, ''), port });
  }
  const inNets = (a: string | undefined) =>
    nets && a !== undefined && isIP(a) !== 0 && (isIPv4(a) ? nets4.check(a, 'ipv4') : nets6.check(a, 'ipv6'));
  return (host, port, address) => {
    const h = bare(host);
    if (inNets(h) || inNets(address)) return true;
    return list.some(
      (e) =>
        (e.port === null || e.port === port) &&
        (h === e.name || address === e.name || (!isIP(h) && h.endsWith(`.${e.name}`))),
    );
  };
}

/** What a client needs to route its connections: the proxy ('' = direct) and what bypasses it. */
export interface ProxyRoute {
  proxy: string;
  noProxy: readonly string[];
}

/** The proxy URL for one connection, or null to go direct. */
export function routeFor(r: ProxyRoute): (host: string, port: number, address?: string) => string | null {
  if (!r.proxy) return () => null;
  const direct = noProxyMatcher(r.noProxy);
  return (host, port, address) => (direct(host, port, address) ? null : r.proxy);
}

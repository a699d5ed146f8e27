// One listener, several public addresses. A utility whose definition has a `host` can be given its
// own host name (config `<name>.host`): a request with that Host belongs wholly to the utility and
// is rewritten onto its mount prefix, so one routing table serves both `proxy.example.com/github.com/x`
// and `example.com/proxy/github.com/x`. Public URLs come from config only: never from the request's
// Host (it is client input).

/**
 * The base URL and one public URL per hosted utility, `N` being their names (`urls.proxy`;
 * `urls[name]` for any other). context.ts names them from the service definitions.
 */
export type PublicUrlsOf<N extends string> = { readonly base: string } & { readonly [K in N]: string } & {
  readonly [name: string]: string | undefined;
};

/** What the router needs of a definition (services/define.ts). */
export interface Hosted {
  readonly name: string;
  readonly host?: { readonly mount: string; readonly urlsCarryMount?: boolean };
}

interface HostCfg {
  host: string;
  publicUrl: string;
}

function hostCfg(config: object, name: string): HostCfg {
  const s = (config as Record<string, Partial<HostCfg> | undefined>)[name];
  if (typeof s?.host !== 'string' || typeof s.publicUrl !== 'string')
    throw new Error(`service ${name} has a host but its config section has no host and publicUrl keys`);
  return { host: s.host, publicUrl: s.publicUrl };
}

export function publicUrls(
  config: { readonly server: { readonly publicUrl: string } } & Readonly<Record<string, unknown>>,
  services: readonly Hosted[],
): PublicUrlsOf<string> {
  const base = config.server.publicUrl;
  const urls: Record<string, string> = { base };
  for (const s of services) {
    if (!s.host) continue;
    const h = hostCfg(config, s.name);
    // A utility whose URLs carry its mount (avatars) is served from the base host's root.
    const path = s.host.urlsCarryMount ? '' : s.host.mount;
    urls[s.name] = h.publicUrl || (h.host ? `${new URL(base).protocol}//${h.host}` : `${base}${path}`);
  }
  return urls as PublicUrlsOf<string>;
}

/** Lower-cased host without port and trailing dot; `[::1]:8080` -> `[::1]`. */
export function hostnameOf(hostHeader: string | undefined): string {
  if (!hostHeader) return '';
  let h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end === -1 ? h : h.slice(0, end + 1);
  } else {
    const colon = h.indexOf(':');
    if (colon !== -1) h = h.slice(0, colon);
  }
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

export interface HostRoute {
  /** The configured host name, optionally with a port. */
  host: string;
  mount: string;
  urlsCarryMount: boolean;
}

/** The host routes of the hosted utilities that have a host configured. */
export function hostRoutes(config: object, services: readonly Hosted[]): HostRoute[] {
  return services.flatMap((s) => {
    const host = s.host ? hostCfg(config, s.name).host : '';
    if (!s.host || !host) return [];
    return [{ host, mount: s.host.mount, urlsCarryMount: s.host.urlsCarryMount === true }];
  });
}

/**
 * Builds Fastify's `rewriteUrl`. A configured host that includes a port must match with the port;
 * one without matches any port.
 */
export function hostRewriter(
  routes: readonly HostRoute[],
): (host: string | undefined, url: string) => string {
  const table = routes.map((r) => {
    const match = r.host.toLowerCase();
    return { ...r, match, withPort: /:\d+$/.test(match) };
  });
  if (table.length === 0) return (_h, url) => url;
  return (hostHeader, url) => {
    if (!hostHeader) return url;
    const raw = hostHeader.trim().toLowerCase();
    const bare = hostnameOf(raw);
    for (const t of table) {
      if (t.withPort ? raw !== t.match : bare !== t.match) continue;
      const mount = t.mount;
      // URLs that carry the mount are left alone; anything else on that host is the utility's too.
      if (t.urlsCarryMount && (url === mount || url.startsWith(`${mount}/`) || url.startsWith(`${mount}?`)))
        return url;
      return url.startsWith('/') ? `${mount}${url}` : `${mount}/${url}`;
    }
    return url;
  };
}

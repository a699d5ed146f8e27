// One listener, four public addresses. A request whose Host is the configured proxy, PlantUML or
// avatar host belongs wholly to that utility and is rewritten onto the utility's mount prefix, so
// one routing table serves both `proxy.example.com/github.com/x` and `example.com/proxy/github.com/x`.
// Public URLs come from config only: never from the request's Host (it is client input).

export type VhostName = 'proxy' | 'plantuml' | 'avatar';

export interface PublicUrls {
  base: string;
  proxy: string;
  plantuml: string;
  /** `{avatar_url}`: avatars live at `${avatar}/avatar/<hash>`. */
  avatar: string;
}

interface HostCfg {
  host: string;
  publicUrl: string;
}

/** Where each virtual host's paths are mounted on the base host. */
export const MOUNTS: Record<VhostName, string> = {
  proxy: '/proxy',
  plantuml: '/plantuml',
  avatar: '/avatar',
};

function derived(base: string, h: HostCfg, mount: string): string {
  if (h.publicUrl) return h.publicUrl;
  if (!h.host) return `${base}${mount}`;
  const scheme = new URL(base).protocol;
  return `${scheme}//${h.host}`;
}

export function publicUrls(cfg: {
  server: { publicUrl: string };
  proxy: HostCfg;
  plantuml: HostCfg;
  avatar: HostCfg;
}): PublicUrls {
  const base = cfg.server.publicUrl;
  return {
    base,
    proxy: derived(base, cfg.proxy, MOUNTS.proxy),
    plantuml: derived(base, cfg.plantuml, MOUNTS.plantuml),
    // The avatar path already carries /avatar, so the base host serves it at the root.
    avatar: derived(base, cfg.avatar, ''),
  };
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

/**
 * Builds Fastify's `rewriteUrl`. A configured host that includes a port must match with the port;
 * one without matches any port.
 */
export function hostRewriter(
  hosts: Partial<Record<VhostName, string>>,
): (host: string | undefined, url: string) => string {
  const table: { match: string; withPort: boolean; name: VhostName }[] = [];
  for (const [name, h] of Object.entries(hosts) as [VhostName, string][]) {
    if (!h) continue;
    const lower = h.toLowerCase();
    table.push({ match: lower, withPort: /:\d+$/.test(lower), name });
  }
  if (table.length === 0) return (_h, url) => url;
  return (hostHeader, url) => {
    if (!hostHeader) return url;
    const raw = hostHeader.trim().toLowerCase();
    const bare = hostnameOf(raw);
    for (const t of table) {
      if (t.withPort ? raw !== t.match : bare !== t.match) continue;
      const mount = MOUNTS[t.name];
      // Avatar URLs carry /avatar themselves; anything else on that host is the avatar service's too.
      if (
        t.name === 'avatar' &&
        (url === mount || url.startsWith(`${mount}/`) || url.startsWith(`${mount}?`))
      )
        return url;
      return url.startsWith('/') ? `${mount}${url}` : `${mount}/${url}`;
    }
    return url;
  };
}

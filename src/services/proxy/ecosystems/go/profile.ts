// Go modules mount: `GOPROXY={proxy_url}/go`. Versions' .info/.mod/.zip are immutable and cached,
// `list` and `@latest` are revalidated; the checksum database is passed through at
// `/go/sumdb/<name>/` (go asks `<GOPROXY>/sumdb/<name>/supported` first), so GOSUMDB keeps working
// with no other host reachable. Errors are plain text, as module proxies answer.
import { check, type Route, route } from '../../policy.ts';
import type { UpstreamProfile } from '../upstream.ts';
import { type GoRequest, parseGoPath, unescapeModule, upstreamPath } from './paths.ts';

function proxyOf(cfg: { goProxy: string }): URL {
  return new URL(`${cfg.goProxy}/`);
}

function routeOf(r: Exclude<GoRequest, { kind: 'supported' }>): Route {
  switch (r.kind) {
    case 'sumdb':
      return route({ cache: r.immutable ? 'immutable' : 'none' });
    case 'list':
    case 'latest':
      return route({ cache: 'revalidate' });
    default:
      // `.info` of a query (a branch, a commit) may change; a version's files never do.
      return route({ cache: r.canonical ? 'immutable' : 'none' });
  }
}

export const goProfile: UpstreamProfile = {
  hosts: (cfg) => [proxyOf(cfg).hostname, ...cfg.goSumdb],
  origins: (cfg) => [proxyOf(cfg).href],
  target(_method, rest, cfg) {
    const r = parseGoPath(rest, cfg.goSumdb);
    if (r.kind === 'supported')
      return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: '' };
    if (r.kind === 'sumdb') return { url: new URL(`https://${r.db}${r.path}`), route: routeOf(r) };
    const p = proxyOf(cfg);
    return { url: new URL(p.pathname.replace(/\/$/, '') + upstreamPath(r), p.origin), route: routeOf(r) };
  },
  decide(host, method, _url, cfg) {
    // The module proxy and checksum databases through the path form or a redirect: read-only.
    return host === proxyOf(cfg).hostname || cfg.goSumdb.includes(host) ? check(method, route({})) : null;
  },
  subjects(url, cfg) {
    const p = proxyOf(cfg);
    if (url.hostname !== p.hostname) return undefined;
    const m = /^\/(.+?)\/@(?:v\/([^/]+)|latest)$/.exec(url.pathname.slice(p.pathname.length - 1));
    if (!m?.[1]) return undefined;
    const mod = unescapeModule(m[1]);
    return {
      package: `go/${mod}`,
      file: m[2]?.endsWith('.zip') ? `go/${mod}@${m[2].slice(0, -4)}` : undefined,
    };
  },
};

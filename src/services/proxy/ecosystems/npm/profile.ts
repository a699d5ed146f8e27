// npm registry mount: `npm config set registry {proxy_url}/npm/`. Packuments are revalidated and
// rewritten (tarball URLs onto the proxy), tarballs are cached as immutable, search and audit pass
// through; publishing and logging in are refused (the mount is read-only).
import { check, READ, type Route, route } from '../../policy.ts';
import { MountError } from '../mount-error.ts';
import type { UpstreamProfile } from '../upstream.ts';
import { rewritePackument } from './packument.ts';
import { parseNpmPath, upstreamPath } from './paths.ts';

function registryOf(cfg: { npmRegistry: string }): URL {
  return new URL(`${cfg.npmRegistry}/`);
}

export const npmProfile: UpstreamProfile = {
  hosts: (cfg) => [registryOf(cfg).hostname],
  origins: (cfg) => [registryOf(cfg).href],
  target(method, rest, cfg) {
    const req = parseNpmPath(rest);
    const registry = registryOf(cfg);
    const url = new URL(registry.pathname.replace(/\/$/, '') + upstreamPath(req), registry.origin);
    let r: Route;
    if (req.kind === 'packument') {
      if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS')
        throw new MountError(405, 'this registry mirror is read-only');
      const host = registry.hostname;
      r = route({
        cache: 'revalidate',
        rewrite: (body, _type, links) => rewritePackument(body, host, links),
      });
    } else if (req.kind === 'tarball') r = route({ cache: 'immutable' });
    else if (req.kind === 'audit') r = route({ methods: ['POST'] });
    else r = route({ methods: READ });
    return { url, route: r };
  },
  decide(host, method, _url, cfg) {
    // The registry reached through the path form or a redirect: read-only, uncached.
    return host === registryOf(cfg).hostname ? check(method, route({})) : null;
  },
  subjects(url, cfg) {
    const registry = registryOf(cfg);
    if (url.hostname !== registry.hostname) return undefined;
    try {
      const req = parseNpmPath(url.pathname.slice(registry.pathname.length - 1));
      if (req.kind === 'packument') return { package: `npm/${req.name}` };
      if (req.kind === 'tarball') return { package: `npm/${req.name}`, file: `npm/${req.name}/${req.file}` };
    } catch {
      // not a package path
    }
    return undefined;
  },
};

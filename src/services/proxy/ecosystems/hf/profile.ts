// Hugging Face mount: `HF_ENDPOINT={proxy_url}/hf`. The Hub's API and `resolve` downloads go to the
// Hub; its redirects to the LFS CDN and the Xet bridge are followed here, keeping the Hub's file
// headers (X-Repo-Commit, X-Linked-Size, X-Linked-Etag, X-Xet-Hash) on the answer. Xet hints are
// kept and rewritten: the Link header, the read token's casUrl and the reconstruction's signed
// URLs all point at the proxy, so a Xet client (hf_xet, @huggingface/hub) reaches no other host.
import { createHash } from 'node:crypto';
import type { BodyHash } from '../../../../infra/egress/verified-body.ts';
import { check, type Decision, READ, type Route, route } from '../../policy.ts';
import { MountError } from '../mount-error.ts';
import type { UpstreamProfile } from '../upstream.ts';
import { type HubRequest, parseHubPath } from './paths.ts';
import { rewriteXetJson } from './rewrite.ts';
import { XetFileHash } from './xet-hash.ts';

/** Hub answer headers describing the file a redirect leads to (the CDN's answer lacks them). */
const HUB_FILE_HEADERS = [
  'x-repo-commit',
  'x-linked-etag',
  'x-linked-size',
  'x-xet-hash',
  'x-xet-refresh-route',
  'link',
  'x-error-code',
  'x-error-message',
];
/** The storage hosts the Hub hands out: cdn-lfs*.hf.co, cas-server / cas-bridge / transfer.xethub.hf.co. */
const STORAGE = '*.hf.co';
// cdn-lfs*.hf.co/repos/<a>/<b>/<repo hash>/<sha256>, cas-bridge.xethub.hf.co/<bridge>/<repo>/<xet hash>.
const CONTENT_ADDRESSED =
  /^(?:(cdn-lfs)[a-z0-9-]*\.hf\.co\/repos\/[^/]+\/[^/]+\/[^/]+|cas-bridge\.xethub\.hf\.co\/[^/]+\/[^/]+)\/([0-9a-f]{64})$/;
const RECONSTRUCTION = /^\/v[12]\/reconstructions(\/[0-9a-f]{64})?$/;

/** The SHA-256 an LFS object is named by (its Git LFS oid). */
function sha256Hash(hex: string): BodyHash {
  const h = createHash('sha256');
  return { update: (c) => h.update(c), matches: () => h.digest('hex') === hex };
}

/** The Xet file hash a Xet bridge object is named by. */
function xetHash(hex: string): BodyHash {
  const h = new XetFileHash();
  return { update: (c) => h.update(c), matches: () => h.hex() === hex };
}

function hubOf(cfg: { hfEndpoint: string }): URL {
  return new URL(`${cfg.hfEndpoint}/`);
}

/**
 * `url` is the Hub URL asked for. A download is not cached under its resolve URL: what it leads to
 * is, under its content (the CDN and bridge objects, by hash) or under the Hub's resolve-cache path,
 * which names the commit (a small file the Hub serves itself).
 */
function routeOf(r: HubRequest, url: URL): Route {
  const guard = { htmlGuard: true };
  if (r.kind === 'file' || r.kind === 'resolve-cache') {
    const byCommit = r.kind === 'resolve-cache' && /\/[0-9a-f]{40}\//.test(url.pathname);
    return route({
      ...guard,
      ...(byCommit ? { cache: 'immutable' as const, cacheKey: `hf:${url.host}${url.pathname}` } : {}),
      keepFromRedirect: HUB_FILE_HEADERS,
      rewrite: rewriteXetJson,
      rewriteTypes: ['application/vnd.xet-fileinfo+json'],
    });
  }
  if (r.xetToken)
    return route({
      ...guard,
      rewrite: rewriteXetJson,
      rewriteTypes: ['application/json'],
      urlHeaders: ['x-xet-cas-url'],
    });
  return route({ ...guard, methods: r.post ? ['POST'] : READ });
}

function storageHost(host: string): boolean {
  return host === 'hf.co' || host.endsWith('.hf.co');
}

/** Policy of the storage hosts, reached through rewritten links and followed redirects. */
function storage(method: string, url: URL): Decision {
  if (RECONSTRUCTION.test(url.pathname))
    return check(method, route({ rewrite: rewriteXetJson, rewriteTypes: ['application/json'] }));
  // Signed object URLs (LFS CDN, Xet bridge, xorb transfers): read-only, never cached by URL. The
  // LFS CDN names a file by its SHA-256, the Xet bridge by its Xet hash: each body is checked against
  // that hash, so it binds the object whatever repository or signature led to it, and the object is
  // stored under its kind and hash (an LFS and a Xet hash are different namespaces).
  const named = CONTENT_ADDRESSED.exec(`${url.hostname}${url.pathname}`);
  const hex = named?.[2];
  if (hex) {
    const lfs = named[1] !== undefined;
    return check(
      method,
      route({
        cache: 'immutable',
        cacheKey: `hf:${lfs ? 'lfs' : 'xet'}:${hex}`,
        verify: () => (lfs ? sha256Hash(hex) : xetHash(hex)),
      }),
    );
  }
  return check(method, route({}));
}

export const hfProfile: UpstreamProfile = {
  hosts: (cfg) => [hubOf(cfg).hostname, STORAGE],
  origins: (cfg) => [hubOf(cfg).href],
  target(_method, rest, cfg) {
    const q = rest.indexOf('?');
    const path = q === -1 ? rest : rest.slice(0, q);
    const hub = hubOf(cfg);
    const r = parseHubPath(path);
    const url = new URL(hub.pathname.replace(/\/$/, '') + rest, hub.origin);
    // The WHATWG parser resolves dot segments that survived as %2e: what is sent must be what was checked.
    if (url.pathname !== hub.pathname.replace(/\/$/, '') + path) throw new MountError(400, 'invalid path');
    return { url, route: routeOf(r, url) };
  },
  decide(host, method, url, cfg) {
    const hub = hubOf(cfg);
    if (host === hub.hostname) {
      try {
        return check(method, routeOf(parseHubPath(url.pathname.slice(hub.pathname.length - 1)), url));
      } catch (err) {
        if (err instanceof MountError) return { ok: false, status: 403, reason: err.message };
        throw err;
      }
    }
    return storageHost(host) ? storage(method, url) : null;
  },
  subjects(url, cfg) {
    const hub = hubOf(cfg);
    if (url.hostname !== hub.hostname) return undefined;
    try {
      const r = parseHubPath(url.pathname.slice(hub.pathname.length - 1));
      if (r.kind === 'resolve-cache' || !r.repo) return undefined;
      const id = `hf/${r.type === 'models' ? '' : `${r.type}/`}${r.repo}`;
      return { package: id, file: r.kind === 'file' ? `${id}/${r.path}` : undefined };
    } catch {
      return undefined;
    }
  },
};

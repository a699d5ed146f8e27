// Per-host policy (docs/protocols/reverse-proxy.md §2): which methods and paths an upstream host is
// reachable for, how its responses are treated (HTML guard, body rewrite) and which cache class they fall
// in.

import type { BodyHash } from '../../infra/egress/verified-body.ts';
import type { Links } from './links.ts';

export type CacheClass = 'none' | 'immutable' | 'revalidate';
/** An ecosystem's body rewrite: the new body, or null to relay the original (not its type, not parsable). */
export type BodyRewrite = (body: Buffer, contentType: string, links: Links) => string | null;
export type Rewrite = 'pypi' | 'lfs' | BodyRewrite | null;

export interface Route {
  methods: readonly string[];
  /** The upstream path, when it differs from the request (GitHub `blob` is served as `raw`). */
  path?: string;
  cache: CacheClass;
  rewrite: Rewrite;
  /** git `info/refs`: a redirect is handed to the client so git re-bases its POSTs. */
  gitRefs: boolean;
  /** Replace text/html bodies (GitHub pages must never be served under our domain). */
  htmlGuard: boolean;
  /**
   * Response headers of a redirecting hop kept on the final answer when they are missing there
   * (the Hub's X-Repo-Commit and X-Linked-Size describe the file the CDN then sends).
   */
  keepFromRedirect?: readonly string[];
  /** Response headers holding a URL, rewritten to proxy form like Location. */
  urlHeaders?: readonly string[];
  /**
   * Content types (prefixes) the rewrite applies to; any other body streams through untouched
   * (a Hub `resolve` answer is a small JSON document or a multi-gigabyte file). Unset: every body.
   */
  rewriteTypes?: readonly string[];
  /**
   * Cache key of a content-addressed object whose URL is signed (a CDN URL named by the file's
   * hash, with an expiring query): the object is stored under this, never under its URL.
   */
  cacheKey?: string;
  /**
   * The hash of an object its URL names (a CDN object named by its content): a whole 200 body is
   * checked against it as it streams, and one that does not match is refused (502) and never
   * cached (infra/egress/verified-body.ts).
   */
  verify?: () => BodyHash;
}

/** Policy of an ecosystem's own upstream hosts (its CDNs), consulted before the host list's; null = not its host. */
export type HostPolicy = (host: string, method: string, url: URL) => Decision | null;

export type Decision =
  | { ok: true; route: Route }
  | { ok: false; status: 403 | 405; reason: string; allow?: string };

export const READ = ['GET', 'HEAD'] as const;
const RPC = ['POST'] as const;

export const route = (r: Partial<Route>): Route => ({
  methods: READ,
  cache: 'none',
  rewrite: null,
  gitRefs: false,
  htmlGuard: false,
  ...r,
});

const REPO = '/[^/]+/[^/]+?(?:\\.git)?';
const GIT_REFS = new RegExp(`^${REPO}/info/refs$`);
const GIT_UPLOAD = new RegExp(`^${REPO}/git-upload-pack$`);
const GIT_RECEIVE = new RegExp(`^${REPO}/git-receive-pack$`);
const LFS_BATCH = new RegExp(`^${REPO}/info/lfs/objects/batch$`);
const RELEASE_TAG = /^\/[^/]+\/[^/]+\/releases\/download\/[^/]+\/[^/]+$/;
const RELEASE_LATEST = /^\/[^/]+\/[^/]+\/releases\/latest\/download\/[^/]+$/;
const ARCHIVE_RAW = /^\/[^/]+\/[^/]+\/(archive|raw)\/.+$/;
const BLOB = /^(\/[^/]+\/[^/]+)\/blob\/(.+)$/;
const GIST_RAW = /^\/[^/]+\/[^/]+\/raw(\/.*)?$/;
const DEBIAN = /^\/(debian|debian-security)\//;
const DEBIAN_IMMUTABLE = /\/(pool|by-hash)\//;
const DEBIAN_RELEASE = /\/dists\/[^/]+\/(InRelease|Release|Release\.gpg)$/;

function gitService(search: URLSearchParams, receivePack: boolean): boolean {
  const s = search.get('service');
  return s === 'git-upload-pack' || (receivePack && s === 'git-receive-pack');
}

/** Git smart HTTP and LFS endpoints shared by github.com and gist.github.com. */
function gitRoute(method: string, path: string, q: URLSearchParams, receivePack: boolean): Decision | null {
  const guard = { htmlGuard: true };
  if (GIT_REFS.test(path) && gitService(q, receivePack))
    return check(method, route({ ...guard, gitRefs: true }));
  if (GIT_UPLOAD.test(path) || (receivePack && GIT_RECEIVE.test(path)))
    return check(method, route({ ...guard, methods: RPC }));
  if (LFS_BATCH.test(path)) return check(method, route({ ...guard, methods: RPC, rewrite: 'lfs' }));
  return null;
}

export function check(method: string, r: Route): Decision {
  if (r.methods.includes(method)) return { ok: true, route: r };
  const allow = r.methods.includes('GET') ? [...r.methods, 'OPTIONS'] : [...r.methods, 'OPTIONS'];
  return { ok: false, status: 405, reason: `method ${method} not allowed here`, allow: allow.join(', ') };
}

const deny = (host: string): Decision => ({
  ok: false,
  status: 403,
  reason: `path not allowed for ${host}`,
});

/** Decides on the normalised pathname (after WHATWG dot-segment removal). */
export function decide(
  host: string,
  method: string,
  url: URL,
  opts: { receivePack: boolean; apiGithub: boolean; hostPolicy?: HostPolicy | undefined },
): Decision {
  // An ecosystem's hosts (its CDNs, reached by its redirects) follow its own policy.
  const eco = opts.hostPolicy?.(host, method, url);
  if (eco) return eco;
  const path = url.pathname;
  const q = url.searchParams;
  if (host === 'github.com') {
    const git = gitRoute(method, path, q, opts.receivePack);
    if (git) return git;
    const guard = { htmlGuard: true };
    if (RELEASE_TAG.test(path)) return check(method, route({ ...guard, cache: 'immutable' }));
    if (RELEASE_LATEST.test(path) || ARCHIVE_RAW.test(path)) return check(method, route(guard));
    const blob = BLOB.exec(path);
    if (blob) return check(method, route({ ...guard, path: `${blob[1]}/raw/${blob[2]}` }));
    return deny(host);
  }
  if (host === 'gist.github.com') {
    const git = gitRoute(method, path, q, opts.receivePack);
    if (git) return git;
    if (GIST_RAW.test(path)) return check(method, route({ htmlGuard: true }));
    return deny(host);
  }
  if (host === 'api.github.com') {
    if (!opts.apiGithub) return { ok: false, status: 403, reason: 'api.github.com is not enabled' };
    if (path.startsWith('/repos/') || path === '/rate_limit')
      return check(method, route({ htmlGuard: true }));
    return deny(host);
  }
  if (
    host.endsWith('.github.com') ||
    host === 'githubusercontent.com' ||
    host.endsWith('.githubusercontent.com')
  )
    return check(method, route({ htmlGuard: host.endsWith('github.com') }));
  if (host === 'debian.org' || host.endsWith('.debian.org')) {
    if (!DEBIAN.test(path)) return deny(host);
    const cache = DEBIAN_IMMUTABLE.test(path)
      ? 'immutable'
      : DEBIAN_RELEASE.test(path)
        ? 'revalidate'
        : 'none';
    return check(method, route({ cache }));
  }
  if (host === 'pypi.org') {
    if (path === '/simple/' || path === '/simple') return check(method, route({}));
    if (path.startsWith('/simple/') || /^\/pypi\/[^/]+(\/[^/]+)?\/json$/.test(path))
      return check(method, route({ rewrite: 'pypi', cache: 'revalidate' }));
    return deny(host);
  }
  if (host === 'files.pythonhosted.org')
    return path.startsWith('/packages/') ? check(method, route({ cache: 'immutable' })) : deny(host);
  if (host === 'python.org' || host.endsWith('.python.org'))
    return path.startsWith('/ftp/python/') ? check(method, route({ cache: 'immutable' })) : deny(host);
  if (host === 'secure.gravatar.com' || host === 'www.gravatar.com')
    return path.startsWith('/avatar/') ? check(method, route({})) : deny(host);
  // Hosts an operator added to the allow-list: read-only, uncached.
  return check(method, route({}));
}

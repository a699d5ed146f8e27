// The GOPROXY protocol's paths (docs/protocols/goproxy.md), read from the raw request path: module
// paths and versions in their escaped form (`!` before a capital), the checksum database under
// `/sumdb/<name>/`. Anything a go command would never send is refused with the reason.
import { MountError } from '../mount-error.ts';

export type GoRequest =
  | { kind: 'list' | 'latest'; module: string }
  | { kind: 'info' | 'mod' | 'zip'; module: string; version: string; canonical: boolean }
  | { kind: 'sumdb'; db: string; path: string; immutable: boolean }
  | { kind: 'supported'; db: string };

// Escaped module path elements: lower-case letters (capitals are `!x`), digits and - . _ ~.
const ELEMENT = /^(?:[a-z0-9_~-]|![a-z])(?:[a-z0-9._~-]|![a-z])*$/;
// The first element is a domain name: it has a dot and no leading dash.
const DOMAIN = /^[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)+$/;
/** A canonical semantic version as module proxies serve it (`v1.2.3`, `v0.0.0-2024...-abc`, `+incompatible`). */
const CANONICAL = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-(?:[0-9a-z.-]|![a-z])+)?(\+incompatible)?$/;
// `.info` also answers queries: a branch, a tag or a commit hash (escaped like versions).
const QUERY = /^(?:[a-z0-9._+~-]|![a-z]){1,128}$/;
// Names Windows reserves, which the go command refuses as a path element (golang.org/x/mod/module).
const WINDOWS_NAME = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])$/;

/**
 * A query the go command could send for `.info`: what module.EscapeVersion accepts (no element
 * that is only dots, no trailing dot, no Windows reserved name before its first dot), within
 * QUERY's characters; `v1.0.0.` is none, so it never reaches the upstream.
 */
function isQuery(v: string): boolean {
  return (
    QUERY.test(v) &&
    !v.includes('..') &&
    !v.endsWith('.') &&
    !WINDOWS_NAME.test(v.split('.')[0]!.replace(/!/g, ''))
  );
}
const TILE = /^tile\/\d{1,2}\/(?:\d{1,2}|data)\/(?:x\d{3}\/)*\d{3}(\.p\/\d{1,3})?$/;

/** Throws unless `escaped` is a module path in the protocol's escaped form. */
export function checkModule(escaped: string): string {
  const el = escaped.split('/');
  if (escaped.length > 500 || !DOMAIN.test(el[0] ?? '')) throw new MountError(400, 'invalid module path');
  for (const e of el)
    if (!ELEMENT.test(e) || e.endsWith('.') || e === '..') throw new MountError(400, 'invalid module path');
  return escaped;
}

/** The module path as people write it: `!x` -> `X`. */
export function unescapeModule(escaped: string): string {
  return escaped.replace(/!([a-z])/g, (_m, c: string) => c.toUpperCase());
}

function sumdb(path: string, dbs: readonly string[]): GoRequest {
  const m = /^\/sumdb\/([a-z0-9.-]+)\/(.*)$/.exec(path);
  if (!m?.[1] || m[2] === undefined) throw new MountError(404, 'not found');
  const [, db, rest] = m;
  if (!dbs.includes(db)) throw new MountError(404, `checksum database ${db} is not served here`);
  if (rest === 'supported') return { kind: 'supported', db };
  if (rest === 'latest') return { kind: 'sumdb', db, path: '/latest', immutable: false };
  const tile = TILE.exec(rest);
  if (tile) return { kind: 'sumdb', db, path: `/${rest}`, immutable: tile[1] === undefined };
  const lookup = /^lookup\/(.+)@([^@/]+)$/.exec(rest);
  if (lookup?.[1] && lookup[2]) {
    checkModule(lookup[1]);
    if (!CANONICAL.test(lookup[2])) throw new MountError(400, 'invalid version');
    return { kind: 'sumdb', db, path: `/${rest}`, immutable: false };
  }
  throw new MountError(404, 'not found');
}

export function parseGoPath(rest: string, dbs: readonly string[]): GoRequest {
  // The protocol has no query strings; a request with one is not from a go command.
  if (rest.includes('?'))
    throw new MountError(400, 'query strings are not part of the module proxy protocol');
  // The go command sends `!` (its capital-letter escape) as %21; no other escape is valid.
  rest = rest.replaceAll('%21', '!');
  if (rest.includes('%')) throw new MountError(400, 'percent-encoded bytes are not valid in a module path');
  if (rest.startsWith('/sumdb/')) return sumdb(rest, dbs);
  const latest = /^\/(.+)\/@latest$/.exec(rest);
  if (latest?.[1]) return { kind: 'latest', module: checkModule(latest[1]) };
  const m = /^\/(.+)\/@v\/(list|[^/]+\.(info|mod|zip))$/.exec(rest);
  if (!m?.[1] || !m[2]) throw new MountError(404, 'not found');
  const module = checkModule(m[1]);
  if (m[2] === 'list') return { kind: 'list', module };
  const kind = m[3] as 'info' | 'mod' | 'zip';
  const version = m[2].slice(0, -(kind.length + 1));
  const canonical = CANONICAL.test(version);
  if (!canonical && (kind !== 'info' || !isQuery(version)))
    throw new MountError(400, `invalid version: ${version.slice(0, 80)}`);
  return { kind, module, version, canonical };
}

export function upstreamPath(r: Exclude<GoRequest, { kind: 'supported' }>): string {
  switch (r.kind) {
    case 'sumdb':
      return r.path;
    case 'list':
      return `/${r.module}/@v/list`;
    case 'latest':
      return `/${r.module}/@latest`;
    default:
      return `/${r.module}/@v/${r.version}.${r.kind}`;
  }
}

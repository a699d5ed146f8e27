// The npm registry paths the mount serves, read from the raw request path (never decoded first):
// packuments (`/<name>`, `/@scope%2f<name>`), version documents, tarballs (`/<name>/-/<file>.tgz`),
// search, ping and the audit endpoints. Anything else, and any name a registry would refuse, is
// refused here with the reason.
import { MountError } from '../mount-error.ts';

export type NpmRequest =
  | { kind: 'packument'; name: string; version?: string }
  | { kind: 'tarball'; name: string; file: string }
  | { kind: 'search'; query: string }
  | { kind: 'ping' }
  | { kind: 'audit'; path: string };

// npm's own rule (validate-npm-package-name): URL-safe, at most 214 characters, no leading dot or
// underscore. Old packages may have capitals. Every other byte (%, .., /) is refused, so no
// encoding trick reaches the upstream.
const PART = /^(?![._])[A-Za-z0-9._~-]{1,214}$/;
const VERSION = /^[A-Za-z0-9._+~-]{1,256}$/;
const FILE = /^[A-Za-z0-9._+~-]{1,300}\.tgz$/;
const AUDIT = new Set(['/-/npm/v1/security/advisories/bulk', '/-/npm/v1/security/audits/quick']);

function part(s: string, what: string): string {
  if (!PART.test(s)) throw new MountError(400, `invalid package ${what}: ${s.slice(0, 80)}`);
  return s;
}

/** `name` is `pkg` or `@scope/pkg`; the total length rule applies to the whole name. */
function fullName(scope: string | undefined, pkg: string): string {
  const name = scope ? `@${part(scope, 'scope')}/${part(pkg, 'name')}` : part(pkg, 'name');
  if (name.length > 214) throw new MountError(400, 'package name is longer than 214 characters');
  return name;
}

export function parseNpmPath(rest: string): NpmRequest {
  const q = rest.indexOf('?');
  const path = q === -1 ? rest : rest.slice(0, q);
  const query = q === -1 ? '' : rest.slice(q);
  if (path === '/-/ping') return { kind: 'ping' };
  if (path === '/-/v1/search') return { kind: 'search', query };
  if (AUDIT.has(path)) return { kind: 'audit', path };
  if (path.startsWith('/-/')) throw new MountError(404, 'not found');
  // A scoped name's slash comes encoded from npm (`@scope%2fpkg`) and plain from others.
  const seg = path
    .slice(1)
    .replace(/^(@[^/%]*)%2[fF]/, '$1/')
    .split('/');
  let scope: string | undefined;
  if (seg[0]?.startsWith('@')) scope = seg.shift()?.slice(1);
  const [pkg = '', dash, file, ...more] = seg;
  if (pkg === '') throw new MountError(404, 'not found');
  const name = fullName(scope, pkg);
  if (dash === undefined) return { kind: 'packument', name };
  if (dash === '-' && file !== undefined && more.length === 0) {
    if (!FILE.test(file) || file.includes('..')) throw new MountError(400, 'invalid tarball name');
    return { kind: 'tarball', name, file };
  }
  if (file === undefined && dash !== '-') {
    if (!VERSION.test(dash) || dash.includes('..')) throw new MountError(400, 'invalid version or tag');
    return { kind: 'packument', name, version: dash };
  }
  throw new MountError(404, 'not found');
}

/** The registry path of a request, in the form registries accept (`@scope%2fpkg` for packuments). */
export function upstreamPath(r: NpmRequest): string {
  switch (r.kind) {
    case 'packument': {
      const n = r.name.replace('/', '%2f');
      return r.version ? `/${n}/${r.version}` : `/${n}`;
    }
    case 'tarball':
      return `/${r.name}/-/${r.file}`;
    case 'search':
      return `/-/v1/search${r.query}`;
    case 'ping':
      return '/-/ping';
    case 'audit':
      return r.path;
  }
}

// What a /v2/ request asks for, read from the raw path (never a decoded one): the registry and
// repository (path form HOST/<registry>/<name>, or Docker Hub's bare-host mirror form, where
// containerd may name another registry with ?ns=), and a tag or a digest. Everything the
// distribution spec's grammar refuses is refused here, before any upstream is asked.
import { ociError } from './errors.ts';

export interface Digest {
  algorithm: 'sha256' | 'sha512';
  hex: string;
  /** `sha256:<hex>` */
  text: string;
}

export interface ImageName {
  /** The registry as clients name it (docker.io, ghcr.io). */
  registry: string;
  /** Its upstream host (registry-1.docker.io). */
  host: string;
  /** The repository on that registry (library/alpine). */
  repo: string;
  /** The name as the client wrote it after /v2/ (docker.io/library/alpine, or library/alpine). */
  client: string;
}

export type OciRequest =
  | { kind: 'base' }
  | { kind: 'token' }
  | { kind: 'manifest'; name: ImageName; tag: string | null; digest: Digest | null }
  | { kind: 'blob'; name: ImageName; digest: Digest }
  | { kind: 'tags'; name: ImageName; query: string };

/** The registries served: client-facing name -> upstream host (config ociRegistries). */
export class Registries {
  private byName = new Map<string, string>();
  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const [name = '', host] = e.toLowerCase().split('=');
      this.byName.set(name, host ?? name);
    }
    // Docker Hub's other names, as docker itself spells them in references.
    const hub = this.byName.get('docker.io');
    if (hub) for (const alias of ['index.docker.io', 'registry-1.docker.io']) this.byName.set(alias, hub);
  }

  host(name: string): string | undefined {
    return this.byName.get(name);
  }

  /** Upstream hosts of every registry served. */
  hosts(): string[] {
    return [...new Set(this.byName.values())];
  }

  /** The client-facing name of a registry (aliases folded into docker.io). */
  canonical(name: string): string {
    return name === 'index.docker.io' || name === 'registry-1.docker.io' ? 'docker.io' : name;
  }
}

// Distribution spec, "Pulling manifests": path components of lowercase alphanumerics separated by
// `.`, `_`, `__` or runs of `-`. This refuses `..`, empty components and every escape.
const COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const DIGEST = /^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;
const ANY_DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;
/** Names longer than this are refused (the spec's advice for registries). */
const MAX_NAME = 255;
const HOSTLIKE = /^[a-z0-9-]+(\.[a-z0-9-]+)+$/;

export function parseDigest(s: string): Digest | null {
  if (!DIGEST.test(s)) return null;
  const [algorithm, hex] = s.split(':') as ['sha256' | 'sha512', string];
  return { algorithm, hex, text: s };
}

function digestOrThrow(s: string): Digest {
  const d = parseDigest(s);
  if (d) return d;
  if (ANY_DIGEST.test(s))
    throw ociError(400, 'DIGEST_INVALID', 'unsupported digest algorithm (sha256 and sha512 are)');
  throw ociError(400, 'DIGEST_INVALID', 'invalid digest');
}

function imageName(path: string, ns: string | null, regs: Registries): ImageName {
  if (path.length > MAX_NAME) throw ociError(400, 'NAME_INVALID', `repository name longer than ${MAX_NAME}`);
  const parts = path.split('/');
  const first = parts[0] ?? '';
  let registry: string;
  let repoParts: string[];
  if (parts.length > 1 && (first.includes('.') || first === 'localhost')) {
    // Path form: the first component is the registry, as in docker.io/library/alpine.
    if (!HOSTLIKE.test(first)) throw ociError(400, 'NAME_INVALID', 'invalid registry name');
    registry = first;
    repoParts = parts.slice(1);
  } else {
    // Bare-host mirror form: Docker Hub, or the registry containerd names with ?ns=.
    registry = ns ?? 'docker.io';
    repoParts = parts;
  }
  for (const c of repoParts)
    if (!COMPONENT.test(c)) throw ociError(400, 'NAME_INVALID', 'invalid repository name');
  const host = regs.host(registry);
  if (!host) throw ociError(403, 'DENIED', `registry not served here: ${registry}`);
  registry = regs.canonical(registry);
  // Docker Hub's official images live under library/ (docker pull alpine = library/alpine).
  if (registry === 'docker.io' && repoParts.length === 1) repoParts = ['library', ...repoParts];
  return { registry, host, repo: repoParts.join('/'), client: path };
}

/** Parses `/v2/...` (the path after the proxy mount, with its query) into what is asked for. */
export function parseRequest(raw: string, regs: Registries): OciRequest {
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = q === -1 ? '' : raw.slice(q + 1);
  if (path === '/v2' || path === '/v2/') return { kind: 'base' };
  if (path === '/v2/token') return { kind: 'token' };
  if (!path.startsWith('/v2/')) throw ociError(404, 'NAME_UNKNOWN', 'not a registry path');
  // Escapes are never part of a valid name, tag or digest: %2F must not become a separator later.
  if (path.includes('%')) throw ociError(400, 'NAME_INVALID', 'escaped characters in the path');
  const rest = path.slice(4);
  let ns: string | null = null;
  for (const pair of query.split('&')) {
    if (pair.startsWith('ns=')) {
      ns = pair.slice(3).toLowerCase();
      if (!HOSTLIKE.test(ns)) throw ociError(400, 'NAME_INVALID', 'invalid ns registry');
    }
  }
  const tags = /^(.+)\/tags\/list$/.exec(rest);
  if (tags?.[1]) return { kind: 'tags', name: imageName(tags[1], ns, regs), query };
  if (/\/blobs\/uploads(\/|$)/.test(rest))
    throw ociError(405, 'UNSUPPORTED', 'this registry mirror is read-only');
  const m = /^(.+)\/(manifests|blobs|referrers)\/([^/]+)$/.exec(rest);
  if (!m?.[1] || !m[3]) throw ociError(404, 'NAME_UNKNOWN', 'not a registry path');
  const name = imageName(m[1], ns, regs);
  const ref = m[3];
  if (m[2] === 'referrers')
    throw ociError(404, 'UNSUPPORTED', 'the referrers API is not served by this mirror');
  if (m[2] === 'blobs') return { kind: 'blob', name, digest: digestOrThrow(ref) };
  if (ref.includes(':')) return { kind: 'manifest', name, tag: null, digest: digestOrThrow(ref) };
  if (!TAG.test(ref)) throw ociError(400, 'TAG_INVALID', 'invalid tag');
  return { kind: 'manifest', name, tag: ref, digest: null };
}

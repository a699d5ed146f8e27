// The Hugging Face Hub paths the mount serves (docs/protocols/huggingface.md): the API of models,
// datasets and spaces (metadata, trees, paths-info, Xet read tokens), `resolve`/`raw` downloads and
// the Hub's resolve-cache redirects; and, on the storage hosts, Xet reconstructions and the
// signed object URLs. Web pages are never served.
import { MountError } from '../mount-error.ts';

export type HubRequest =
  | { kind: 'file'; repo: string; type: RepoType; revision: string; path: string }
  | { kind: 'api'; repo?: string; type?: RepoType; xetToken: boolean; post: boolean }
  | { kind: 'resolve-cache' };

export type RepoType = 'models' | 'datasets' | 'spaces';

// Repository ids: `namespace/name` (or a legacy bare `name`), letters, digits, - _ . ; never `..`.
const ID_PART = /^(?!\.)[A-Za-z0-9._-]{1,96}$/;
// A revision in a URL: a branch or tag (its slashes encoded as %2F by clients), or a commit hash.
const REVISION = /^(?:[A-Za-z0-9._-]|%2[Ff]){1,256}$/;
// A file path inside a repository, as sent: no dot segments, no encoded slash or dot, no backslash.
const FILE_SEG = /^(?!\.\.?$)(?:[A-Za-z0-9._~!$&'()*+,;=:@ -]|%[0-9A-Fa-f]{2}){1,255}$/;

function repoId(parts: string[]): string {
  for (const p of parts)
    if (!ID_PART.test(p) || p.includes('..')) throw new MountError(400, 'invalid repository id');
  return parts.join('/');
}

function filePath(segs: string[]): string {
  if (segs.length === 0) throw new MountError(404, 'no file named');
  for (const s of segs) {
    if (!FILE_SEG.test(s) || /%2[EeFf]|%5[Cc]|%00/.test(s)) throw new MountError(400, 'invalid file path');
  }
  return segs.join('/');
}

/** Parses the path below the Hub's root (the query is not part of `path`). */
export function parseHubPath(path: string): HubRequest {
  const seg = path.split('/').slice(1);
  if (seg.some((s) => s === '..' || s === '.'))
    throw new MountError(400, 'dot segments are not valid in a Hub path');
  if (seg[0] === 'api') {
    if (seg[1] === 'resolve-cache' && seg.length > 3) return { kind: 'resolve-cache' };
    const type = seg[1] as RepoType;
    if (type !== 'models' && type !== 'datasets' && type !== 'spaces')
      throw new MountError(403, 'this Hub API path is not served through the proxy');
    if (seg.length === 2) return { kind: 'api', xetToken: false, post: false };
    // /api/<type>/<ns>/<name>[/<what>...]; a bare legacy name has no namespace.
    const rest = seg.slice(2);
    const nameParts =
      rest.length >= 2 &&
      !['revision', 'tree', 'paths-info', 'xet-read-token', 'refs', 'commits'].includes(rest[1] ?? '')
        ? rest.slice(0, 2)
        : rest.slice(0, 1);
    const repo = repoId(nameParts);
    const what = rest[nameParts.length];
    for (const s of rest.slice(nameParts.length))
      if (s === '..' || s === '.' || /%2[Ee]|%5[Cc]/.test(s)) throw new MountError(400, 'invalid API path');
    return { kind: 'api', repo, type, xetToken: what === 'xet-read-token', post: what === 'paths-info' };
  }
  let type: RepoType = 'models';
  let s = seg;
  if (s[0] === 'datasets' || s[0] === 'spaces') {
    type = s[0];
    s = s.slice(1);
  }
  const at = s.findIndex((x, i) => (x === 'resolve' || x === 'raw') && i >= 1 && i <= 2);
  if (at === -1)
    throw new MountError(403, 'only the Hub API and file downloads are served through the proxy');
  const repo = repoId(s.slice(0, at));
  const revision = s[at + 1] ?? '';
  if (!REVISION.test(revision) || revision.includes('..')) throw new MountError(400, 'invalid revision');
  return { kind: 'file', repo, type, revision, path: filePath(s.slice(at + 2)) };
}

// What a proxied request was for, as the operator's dashboard ranks it: a GitHub repository
// (owner/repo), a package (PyPI project or Debian package) and the file itself (host + path).
import type { Subjects } from '../../infra/observe/usage/usage.ts';

const GITHUB_REPO_HOSTS = new Set(['github.com', 'raw.githubusercontent.com', 'codeload.github.com']);
/** First path segments of github.com that are pages, not owners. */
const GITHUB_PAGES = new Set(['login', 'settings', 'orgs', 'features', 'marketplace', 'sponsors', 'topics']);
const NAME = /^[A-Za-z0-9._-]{1,100}$/;
/** A last segment with an extension is a file; git's smart-HTTP endpoints and index pages are not. */
const FILE = /\.[A-Za-z0-9]{1,12}$/;

/** PyPI's normal form of a project name (PEP 503). */
const pep503 = (s: string) => s.toLowerCase().replace(/[-_.]+/g, '-');

function githubRepo(host: string, seg: string[]): string | undefined {
  let [owner, repo] = seg;
  if (host === 'api.github.com') {
    if (seg[0] !== 'repos') return undefined;
    [, owner, repo] = seg;
  } else if (!GITHUB_REPO_HOSTS.has(host)) return undefined;
  if (!owner || !repo || !NAME.test(owner) || !NAME.test(repo) || GITHUB_PAGES.has(owner)) return undefined;
  return `${owner}/${repo.replace(/\.git$/, '')}`;
}

function pythonPackage(host: string, seg: string[]): string | undefined {
  if (host === 'pypi.org' && (seg[0] === 'simple' || seg[0] === 'pypi') && seg[1] && NAME.test(seg[1]))
    return `pypi/${pep503(seg[1])}`;
  if (host === 'files.pythonhosted.org' && seg[0] === 'packages') {
    // name-1.0-py3-none-any.whl, name-1.0.tar.gz: the name runs up to the dash before the version.
    const m = /^([A-Za-z0-9._]+?)-\d/.exec(seg[seg.length - 1] ?? '');
    if (m?.[1]) return `pypi/${pep503(m[1])}`;
  }
  return undefined;
}

function debianPackage(seg: string[]): string | undefined {
  // <archive>/pool/<component>/<prefix>/<source>/<package>_<version>_<arch>.deb (or a source file)
  const pool = seg.indexOf('pool');
  if (pool === -1 || seg.length < pool + 5) return undefined;
  const file = seg[seg.length - 1] ?? '';
  const name = file.split('_')[0] ?? '';
  return file.includes('_') && /^[a-z0-9][a-z0-9.+-]{0,99}$/.test(name) ? `debian/${name}` : undefined;
}

export function subjectsOf(host: string, pathname: string): Subjects {
  const seg = pathname.split('/').filter(Boolean);
  const last = seg[seg.length - 1] ?? '';
  return {
    repo: githubRepo(host, seg),
    package: pythonPackage(host, seg) ?? debianPackage(seg),
    file: FILE.test(last) ? `${host}${pathname}` : undefined,
  };
}

// Body rewrites that keep clients on the proxy: PyPI index pages (docs/protocols/reverse-proxy.md §5.5) and
// git LFS batch answers (§5.2). Both work on identity-encoded, size-capped bodies.
import type { Links } from './links.ts';

const PYPI_TYPES = [
  'text/html',
  'application/vnd.pypi.simple.v1+html',
  'application/vnd.pypi.simple.v1+json',
  'application/json',
];

/** Replaces absolute PyPI/file-host prefixes; `#sha256=` fragments and attributes stay intact. */
export function rewritePypi(body: Buffer, contentType: string, links: Links): string | null {
  const type = contentType.split(';')[0]!.trim();
  if (!PYPI_TYPES.includes(type)) return null;
  return body
    .toString('utf8')
    .replaceAll('https://files.pythonhosted.org/', `${links.base}/files.pythonhosted.org/`)
    .replaceAll('https://pypi.org/', `${links.base}/pypi.org/`);
}

interface LfsAction {
  href?: unknown;
}

/** Rewrites every `objects[].actions.*.href` on an allow-listed host; headers and expiry stay. */
export function rewriteLfs(body: Buffer, links: Links): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof doc !== 'object' || doc === null) return null;
  const objects = (doc as { objects?: unknown }).objects;
  if (!Array.isArray(objects)) return null;
  for (const obj of objects) {
    const actions = (obj as { actions?: unknown } | null)?.actions;
    if (typeof actions !== 'object' || actions === null) continue;
    for (const a of Object.values(actions as Record<string, LfsAction>)) {
      if (typeof a?.href !== 'string') continue;
      try {
        const u = new URL(a.href);
        if (links.allowed(u)) a.href = links.proxied(u);
      } catch {
        // leave an unparsable href as it is; the client will fail on it, not the proxy
      }
    }
  }
  return JSON.stringify(doc);
}

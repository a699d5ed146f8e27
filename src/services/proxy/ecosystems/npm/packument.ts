// Packuments (full and abbreviated, `application/vnd.npm.install-v1+json`) and version documents
// with every `dist.tarball` moved onto the proxy, so npm, pnpm and yarn fetch tarballs through it
// too (not every registry proxy does: nodejs/corepack#502). Other URLs (homepage, repository) stay.
import type { Links } from '../../links.ts';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function fixDist(version: unknown, links: Links, registryHost: string): void {
  if (!isObject(version) || !isObject(version['dist'])) return;
  const dist = version['dist'];
  const raw = dist['tarball'];
  if (typeof raw !== 'string') return;
  let url = raw;
  // Some mirrors still write http:// tarball URLs for their own host; they are fetched over https.
  if (url.startsWith(`http://${registryHost}/`)) url = `https://${url.slice('http://'.length)}`;
  dist['tarball'] = links.rewriteUrl(url);
}

/** The rewritten document, or null when the body is not a JSON object (relayed as it came). */
export function rewritePackument(body: Buffer, registryHost: string, links: Links): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(doc)) return null;
  if (isObject(doc['versions']))
    for (const v of Object.values(doc['versions'])) fixDist(v, links, registryHost);
  else fixDist(doc, links, registryHost);
  return JSON.stringify(doc);
}

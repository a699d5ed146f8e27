// Xet's JSON documents name the hosts a client talks to next: the read token's `casUrl`, the
// reconstruction's signed xorb URLs (`fetch_info` in v1, `xorbs` in v2), the file-info answer's
// links. Each absolute URL on an allowed host is moved onto the proxy; nothing else changes.
import type { Links } from '../../links.ts';

function walk(v: unknown, links: Links): unknown {
  if (typeof v === 'string') return v.startsWith('https://') ? links.rewriteUrl(v) : v;
  if (Array.isArray(v)) return v.map((x) => walk(x, links));
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = walk(o[k], links);
  }
  return v;
}

/** The document with its URLs on the proxy, or null when the body is not JSON (relayed as it came). */
export function rewriteXetJson(body: Buffer, _type: string, links: Links): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  return JSON.stringify(walk(doc, links));
}

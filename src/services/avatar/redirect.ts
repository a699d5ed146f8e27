// d=<url> (docs/protocols/gravatar.md §4): a redirect to anywhere would be an open redirect, so only URLs
// matching the operator's allow-list get a 302 (as ivatar does); the rest get the built-in default.

interface Rule {
  scheme: 'http:' | 'https:' | null;
  host: string;
  /** `.example.com` also matches sub-domains of example.com (and example.com itself). */
  suffix: boolean;
  port: string;
  path: string;
}

/** Parses DEVUTIL_AVATAR_REDIRECT_ALLOW entries: `https://host/prefix`, `host/prefix`, `.domain`. */
export function parseAllowList(items: readonly string[]): Rule[] {
  return items.map((item) => {
    const m = /^(?:(https?):\/\/)?(\.?)([a-z0-9.-]+)(?::(\d+))?(\/.*)?$/i.exec(item.trim());
    if (!m) throw new Error(`bad redirect allow-list entry ${item}`);
    return {
      scheme: m[1] ? (`${m[1].toLowerCase()}:` as 'http:' | 'https:') : null,
      suffix: m[2] === '.',
      host: m[3]!.toLowerCase().replace(/\.$/, ''),
      port: m[4] ?? '',
      path: m[5] ?? '/',
    };
  });
}

/** The URL to redirect to, normalised by the WHATWG parser, or null when it is not allowed. */
export function allowedRedirect(raw: string, rules: readonly Rule[]): string | null {
  if (rules.length === 0 || raw.length > 2048) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.username || u.password) return null;
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  // Decoded dot segments were resolved by the parser; an encoded one could still climb out of a prefix.
  if (/%2e|%2f|%5c/i.test(u.pathname)) return null;
  for (const r of rules) {
    if (r.scheme && r.scheme !== u.protocol) continue;
    if (r.port !== u.port) continue;
    const hostOk = r.suffix ? host === r.host || host.endsWith(`.${r.host}`) : host === r.host;
    if (!hostOk) continue;
    if (!u.pathname.startsWith(r.path)) continue;
    return u.href;
  }
  return null;
}

// Target parsing on the raw request bytes (docs/protocols/reverse-proxy.md §1): validate the host segment
// before any URL parser sees it, then compare the WHATWG result with what was validated.

export interface Target {
  host: string;
  /** The path and query as sent, e.g. `/o/r/info/refs?service=git-upload-pack`. */
  rest: string;
  /** `https://host` + rest, normalised by WHATWG (dot segments resolved). */
  url: URL;
}

export class TargetError extends Error {
  readonly status: 400 | 403;
  constructor(status: 400 | 403, message: string) {
    super(message);
    this.status = status;
  }
}

const HOST_CHARS = /^[A-Za-z0-9.-]{1,253}$/;
const SCHEME = /^https?:\/{1,2}/i;
// C0 controls, space and DEL never appear in a well-formed request target.
const CONTROL = /[\x00-\x20\x7f]/;

/** True for hosts that a URL parser would read as an IPv4 address (decimal, hex, octal parts). */
function looksNumeric(host: string): boolean {
  const labels = host.split('.');
  const last = labels[labels.length - 1] ?? '';
  return /^(0x[0-9a-f]*|\d+)$/i.test(last);
}

/** Parses `host/path?q`, `https://host/path`, `https:/host/path` (a leading `/` already removed or not). */
export function parseTarget(raw: string, opts: { maxLength: number; allowHttp: boolean }): Target {
  if (raw.length > opts.maxLength) throw new TargetError(400, 'target URL is too long');
  if (CONTROL.test(raw)) throw new TargetError(400, 'control characters in target URL');
  let s = raw.replace(/^\/+/, '');
  const scheme = SCHEME.exec(s);
  if (scheme) {
    if (/^http:/i.test(scheme[0]) && !opts.allowHttp)
      throw new TargetError(400, 'http:// targets are disabled');
    s = s.slice(scheme[0].length);
  }
  const end = s.search(/[/?]/);
  const rawHost = end === -1 ? s : s.slice(0, end);
  let rest = end === -1 ? '/' : s.slice(end);
  if (rest.startsWith('?')) rest = `/${rest}`;
  if (rawHost === '') throw new TargetError(400, 'missing target host; use /<host>/<path>');
  if (!HOST_CHARS.test(rawHost)) throw new TargetError(400, 'invalid target host');
  const host = rawHost.toLowerCase();
  if (host.endsWith('.') || host.startsWith('.') || host.includes('..'))
    throw new TargetError(400, 'invalid target host');
  if (host.split('.').some((l) => l.startsWith('-') || l.endsWith('-') || l.length > 63))
    throw new TargetError(400, 'invalid target host');
  if (looksNumeric(host)) throw new TargetError(400, 'IP address targets are not allowed');
  if (!host.includes('.')) throw new TargetError(400, 'invalid target host');
  if (rest.includes('\\')) throw new TargetError(400, 'backslash in target path');
  let url: URL;
  try {
    url = new URL(`https://${host}${rest}`);
  } catch {
    throw new TargetError(400, 'invalid target URL');
  }
  if (url.hostname !== host || url.port !== '' || url.username !== '' || url.password !== '')
    throw new TargetError(400, 'invalid target URL');
  return { host, rest, url };
}

/** Exact entries, or `*.base` entries matching on a label boundary; never substrings. */
export class AllowList {
  private exact = new Set<string>();
  private suffixes: string[] = [];

  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const l = e.toLowerCase();
      if (l.startsWith('*.')) this.suffixes.push(l.slice(1));
      else this.exact.add(l);
    }
  }

  has(host: string): boolean {
    if (this.exact.has(host)) return true;
    return this.suffixes.some((s) => host.length > s.length && host.endsWith(s));
  }

  /**
   * The upstream URL check (rewritten links, followed redirects): https on an allowed host, without
   * port, userinfo, IP literal or trailing dot.
   */
  allowsUrl(u: URL): boolean {
    if (u.protocol !== 'https:' || u.port !== '' || u.username !== '' || u.password !== '') return false;
    if (!/^[a-z0-9.-]+$/.test(u.hostname) || /^[\d.]+$|^0x|\.$/.test(u.hostname)) return false;
    return this.has(u.hostname);
  }
}

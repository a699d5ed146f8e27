// Proxy-form URLs: turns an upstream URL on an allow-listed host into `{base}/{host}{path}{query}`
// and checks redirect targets (digest §4). Only URL-serialised text goes into rewritten headers.
import type { AllowList } from './target.ts';

export class Links {
  readonly base: string;
  private allow: AllowList;
  constructor(
    /** Public proxy URL plus the secret prefix when one is configured; no trailing slash. */
    base: string,
    allow: AllowList,
  ) {
    this.base = base;
    this.allow = allow;
  }

  /** The target URL is https, allow-listed and carries no port, userinfo or IP literal. */
  allowed(u: URL): boolean {
    if (u.protocol !== 'https:' || u.port !== '' || u.username !== '' || u.password !== '') return false;
    if (!/^[a-z0-9.-]+$/.test(u.hostname) || /^[\d.]+$|^0x|\.$/.test(u.hostname)) return false;
    return this.allow.has(u.hostname);
  }

  proxied(u: URL): string {
    return `${this.base}/${u.hostname}${u.pathname}${u.search}`;
  }

  /** Rewrites one header URL (absolute or relative to `from`) when it points at an allowed host. */
  rewriteHeader(value: string, from: URL): string {
    try {
      const u = new URL(value, from);
      return this.allowed(u) ? this.proxied(u) : value;
    } catch {
      return value;
    }
  }

  /** Rewrites `<url>` references in a Link header. */
  rewriteLink(value: string, from: URL): string {
    return value.replace(/<([^>]*)>/g, (_m, ref: string) => `<${this.rewriteHeader(ref, from)}>`);
  }
}

// Proxy-form URLs: turns an upstream URL on an allow-listed host into `{base}/{host}{path}{query}` and
// checks redirect targets (docs/protocols/reverse-proxy.md §4). Only URL-serialised text goes into
// rewritten headers. An ecosystem's upstream (https://registry.npmjs.org/) maps onto its mount
// ({base}/npm/) instead.
import type { AllowList } from './target.ts';

export class Links {
  readonly base: string;
  private allow: AllowList;
  private origins: readonly [string, string][];
  constructor(
    /** Public proxy URL plus the secret prefix when one is configured; no trailing slash. */
    base: string,
    allow: AllowList,
    /** Upstream URL prefix -> proxied prefix, both ending in `/`, tried before the path form. */
    origins: readonly [string, string][] = [],
  ) {
    this.base = base;
    this.allow = allow;
    this.origins = origins;
  }

  /** The target URL is https, allow-listed and carries no port, userinfo or IP literal. */
  allowed(u: URL): boolean {
    return this.allow.allowsUrl(u);
  }

  proxied(u: URL): string {
    if (this.origins.length) {
      const href = `${u.origin}${u.pathname}${u.search}`;
      for (const [from, to] of this.origins) if (href.startsWith(from)) return to + href.slice(from.length);
    }
    return `${this.base}/${u.hostname}${u.pathname}${u.search}`;
  }

  /** `url` in proxy form when it is an allowed https URL, else unchanged (bodies of JSON APIs). */
  rewriteUrl(url: string): string {
    try {
      const u = new URL(url);
      if (!this.allowed(u)) return url;
      const p = this.proxied(u);
      // A bare origin (a base URL such as Xet's casUrl) stays without a slash: clients append `/v1/...`.
      return url.endsWith('/') || u.pathname !== '/' || u.search ? p : p.replace(/\/$/, '');
    } catch {
      return url;
    }
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

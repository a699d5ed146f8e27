// What clients put in their settings to use the proxy's host-path form (git, pip, apt): the one
// place these URLs are spelled, for the home page's set-up lines and setup.sh (services/setup/).
import type { Config } from '../../config.ts';
import type { PublicUrls } from '../../context.ts';
import { AllowList } from './target.ts';

/**
 * The proxy's public URL as clients put it in their settings: `urls.proxy`, plus `/t/<SECRET>`
 * when DEVUTIL_PROXY_SECRET is set (the placeholder, never the secret itself).
 */
export function proxyPrefix(p: { config: Config; urls: PublicUrls }): string {
  return p.config.proxy.secret ? `${p.urls.proxy}/t/<SECRET>` : p.urls.proxy;
}

/** git's `url.<base>.insteadOf https://github.com/`: the proxy takes the whole original URL. */
export const gitInsteadOf = (prefix: string): string => `${prefix}/https://github.com/`;

/** pip's `index-url`: PyPI's simple index through the proxy (its file links are rewritten to it). */
export const pipIndexUrl = (prefix: string): string => `${prefix}/pypi.org/simple`;

/** Debian's archive hosts an apt source names; each maps onto `<prefix>/<host>`. */
export const APT_HOSTS = ['deb.debian.org', 'security.debian.org'] as const;
export const aptUri = (prefix: string, host: string): string => `${prefix}/${host}`;

/** Which of git, pip and apt this proxy's allow-list lets through (all of their hosts allowed). */
export function hostPathClients(allow: readonly string[]): { git: boolean; pip: boolean; apt: string[] } {
  const a = new AllowList(allow);
  return {
    git: a.has('github.com'),
    pip: a.has('pypi.org') && a.has('files.pythonhosted.org'),
    apt: APT_HOSTS.filter((h) => a.has(h)),
  };
}

// What the proxy cache may store and under which key (RFC 9111 §3, §4.1, §5.2). Pure: the cache
// layer asks these before it stores or looks up an object, whatever store sits underneath.
import { forwardedOnGet } from './headers.ts';

type Headers = Record<string, string | string[] | undefined>;

function value(h: Headers, name: string): string {
  const v = h[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

function directives(cacheControl: string): Set<string> {
  return new Set(
    cacheControl
      .toLowerCase()
      .split(',')
      .map((d) => d.trim().split('=')[0]!.trim())
      .filter(Boolean),
  );
}

/**
 * The object's URL as a key: never the fragment (clients do not send one, and a key that kept it
 * would let anyone fill the cache with copies of one object under `#1`, `#2`...).
 */
export function urlKey(url: URL): string {
  return `${url.origin}${url.pathname}${url.search}`;
}

/**
 * The request headers a response varies on, lower-cased and sorted; '*' when it varies on
 * something outside the request (never stored). Accept-Encoding is left out: only responses
 * without Content-Encoding are stored, and the identity body is acceptable to every request. So is
 * every header the proxy does not send upstream (Origin, Cookie, X-Forwarded-For...): the upstream
 * never saw it, so its answer cannot depend on it, and keying on it would store one copy per value.
 */
export function varyNames(vary: string | undefined): string[] | '*' {
  const names = new Set<string>();
  for (const raw of (vary ?? '').split(',')) {
    const n = raw.trim().toLowerCase();
    if (n === '*') return '*';
    if (n && n !== 'accept-encoding' && forwardedOnGet(n)) names.add(n);
  }
  return [...names].sort();
}

/** The key of the variant selected by `names` for this request (RFC 9111 §4.1). */
export function variantKey(base: string, names: readonly string[], req: Headers): string {
  if (names.length === 0) return base;
  return `${base}\nvary:${names.map((n) => `${n}=${JSON.stringify(value(req, n))}`).join('&')}`;
}

export type StoreRule = { store: false; why: string } | { store: true; vary: string[] };

/** May this response be stored for this request, and which request headers select it? */
export function storeRule(req: Headers, res: Headers): StoreRule {
  const reqCc = directives(value(req, 'cache-control'));
  if (reqCc.has('no-store')) return { store: false, why: 'request no-store' };
  const resCc = directives(value(res, 'cache-control'));
  // private: for one user only; no-store: never kept; no-cache: every reuse must be revalidated,
  // which the immutable class never does, so it is not stored at all.
  for (const d of ['private', 'no-store', 'no-cache'])
    if (resCc.has(d)) return { store: false, why: `response ${d}` };
  const vary = varyNames(value(res, 'vary'));
  if (vary === '*') return { store: false, why: 'vary *' };
  return { store: true, vary };
}

// Outbound revalidation, once: the avatar mirror, PlantUML includes and the proxy cache keep a copy
// of what an upstream sent with its validators, and ask again with a conditional GET (RFC 9110
// 13.1.2 If-None-Match, 13.1.3 If-Modified-Since); a 304 confirms the copy (RFC 9111 4.3.3).
//
// undici's own interceptors are not used for this. `interceptors.cache` is a whole RFC 9111 cache
// with its own stores (memory, or node:sqlite, which Node 20 lacks): each copy here lives in
// infra/cache (disk budget, restart reuse, body files nginx can send) and each utility has its own
// freshness rule (the proxy's configured TTL for index files, the avatar's max-age clamped to
// [min, max] and its offline copy, an include's fixed window), so the interceptor would be a second
// cache with other rules. `interceptors.redirect` cannot check each hop against the proxy's
// allow-list (forward.ts does), and `interceptors.deduplicate` shares an exchange, not the parse and
// store after it, which SingleFlight (infra/cache/single-flight.ts) and the proxy's fill already do.
import type { Dispatcher } from 'undici';
import type { Egress } from './client.ts';

/** The validators kept with a stored copy, as the upstream sent them. */
export interface StoredValidators {
  etag: string | null;
  lastModified: string | null;
}

/** Longer values are not kept: a validator is an opaque tag or a date, never a page of text. */
const MAX_VALIDATOR = 256;

const one = (v: unknown) => (typeof v === 'string' && v !== '' && v.length <= MAX_VALIDATOR ? v : null);

/** The ETag and Last-Modified of an upstream response worth keeping with its body. */
export function validatorsOf(headers: Record<string, unknown>): StoredValidators {
  return { etag: one(headers['etag']), lastModified: one(headers['last-modified']) };
}

/** The request fields that ask whether a stored copy is still current (none without validators). */
export function conditionalHeaders(
  v: { etag?: string | null; lastModified?: string | null } | null | undefined,
): Record<string, string> {
  const h: Record<string, string> = {};
  if (v?.etag) h['if-none-match'] = v.etag;
  if (v?.lastModified) h['if-modified-since'] = v.lastModified;
  return h;
}

export interface ConditionalGet {
  url: URL;
  /** Request fields besides the conditional ones (user-agent, accept...). */
  headers: Record<string, string>;
  signal?: Dispatcher.RequestOptions['signal'];
}

export type Revalidated = { notModified: true } | { notModified: false; res: Dispatcher.ResponseData };

/**
 * A GET through `http`, conditional on `stored` when there is one. A 304 to a request that carried
 * validators is `notModified` (its body drained); anything else, a 304 to a request without
 * validators included, is handed back for the caller's policy.
 */
export async function conditionalGet(
  http: Egress,
  r: ConditionalGet,
  stored: { etag?: string | null; lastModified?: string | null } | null | undefined,
): Promise<Revalidated> {
  const conditions = conditionalHeaders(stored);
  const res = await http.request({
    origin: r.url.origin,
    path: `${r.url.pathname}${r.url.search}`,
    method: 'GET',
    headers: { ...r.headers, ...conditions },
    ...(r.signal ? { signal: r.signal } : {}),
  });
  if (res.statusCode === 304 && Object.keys(conditions).length > 0) {
    await res.body.dump();
    return { notModified: true };
  }
  return { notModified: false, res };
}

// One proxied exchange: request upstream through the guarded agent, follow redirects internally
// (docs/protocols/reverse-proxy.md §4) and hand back status, filtered headers and a body stream, never
// buffered except for the rewrite routes (PyPI index pages, LFS batch answers), which are capped.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { humanBytes } from '../../infra/config/schema.ts';
import { BodyTooLarge, capStream, discard, readCapped } from '../../infra/egress/capped-body.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { REDIRECT_STATUSES, type RedirectFault, redirectTarget } from '../../infra/egress/redirect.ts';
import { verifiedBody } from '../../infra/egress/verified-body.ts';
import type { RememberOptions } from '../../infra/http/fast-lane.ts';
import type { PreparedResponse } from '../../infra/http/prepared-response.ts';
import { ProxyError } from './errors.ts';
import { type HeaderMap, requestHeaders, responseHeaders } from './headers.ts';
import type { Links } from './links.ts';
import { decide, type HostPolicy, type Route } from './policy.ts';
import { rewriteLfs, rewritePypi } from './rewrite.ts';

export interface Upstream {
  status: number;
  headers: HeaderMap;
  /** null for HEAD, 204, 304 and replaced bodies (`text` set instead). */
  body: Readable | null;
  text?: string | Buffer;
  /** Body bytes a front proxy sends for this answer (X-Accel-Redirect in the headers, no body here). */
  offloaded?: number;
  /** The URL that produced the response (after internal redirects). */
  url: URL;
  /** A cache hit the fast lane may repeat for the same URL (ProxyGate.relay hands it over). */
  lane?: LaneHit;
}

export interface LaneHit {
  prepared: PreparedResponse;
  remember: RememberOptions;
}

export interface ForwardOptions {
  /** The proxy's egress dispatcher (infra/egress/client.ts): address guard, timeouts, keep-alive. */
  agent: Egress;
  links: Links;
  maxRedirects: number;
  maxResponseBytes: number;
  maxRequestBytes: number;
  maxRewriteBytes: number;
  receivePack: boolean;
  apiGithub: boolean;
  /** An ecosystem's policy for its own hosts (it lends forward() a copy of these options). */
  hostPolicy?: HostPolicy;
  /**
   * Serves a redirect's target whose route names a cache key (a content-addressed CDN object)
   * through the cache, so a signed URL that changes each time still hits the stored object.
   */
  viaCache?: (r: ForwardRequest) => Promise<Upstream>;
}

export interface ForwardRequest {
  method: string;
  url: URL;
  route: Route;
  headers: IncomingHttpHeaders;
  body: Readable | null;
  /** Aborts the upstream exchange (the client left): an AbortSignal or infra/egress RequestAbort. */
  signal: Dispatcher.RequestOptions['signal'];
}

const REDIRECT_FAULTS: Record<RedirectFault, string> = {
  invalid: 'upstream sent an invalid redirect',
  'not-allowed': 'redirect to non-allowed host',
  'too-many': 'too many redirects',
};

/** `src` passed through, failing with a 413 once more than `max` bytes went by. */
function capped(src: Readable, max: number, what: string): Readable {
  return capStream(src, max, () => new ProxyError(413, `${what} exceeds ${humanBytes(max)}`));
}

export async function forward(o: ForwardOptions, r: ForwardRequest): Promise<Upstream> {
  const withBody = r.body !== null && r.method !== 'GET' && r.method !== 'HEAD';
  const headers = requestHeaders(r.headers, { withBody });
  // A body rewritten or checked against its hash is wanted as it is, not encoded.
  if (r.route.rewrite || r.route.verify) headers['accept-encoding'] = 'identity';
  let body: Readable | null = null;
  if (withBody && r.body) {
    // undici destroys a failed request's body with the error; the failure is reported once, below.
    r.body.on('error', () => {});
    const len = Number(headers['content-length'] ?? Number.NaN);
    if (len > o.maxRequestBytes)
      throw new ProxyError(413, `request body exceeds ${humanBytes(o.maxRequestBytes)}`);
    body = Number.isNaN(len) ? capped(r.body, o.maxRequestBytes, 'request body') : r.body;
  }
  // r.url is never changed here: without a path mapping it is used as is, not parsed again.
  let url = r.route.path ? new URL(`${r.url.origin}${r.route.path}${r.url.search}`) : r.url;
  const firstHost = url.hostname;
  let htmlGuard = r.route.htmlGuard;
  // The hash the final hop's object is known by (its own route's, after a redirect).
  let verify = r.route.verify;
  const keep = r.route.keepFromRedirect;
  let kept: HeaderMap | undefined;
  for (let hop = 0; ; hop++) {
    if (url.hostname !== firstHost) {
      delete headers['authorization'];
    }
    const res = await o.agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: r.method as 'GET',
      headers,
      body: hop === 0 ? body : null,
      signal: r.signal,
    });
    // HTTP statuses are 100-599 (RFC 9110 §15) and a final answer is not 1xx; undici passes any
    // three digits on (999, 600), which no client could be given.
    if (res.statusCode < 200 || res.statusCode > 599) {
      discard(res.body);
      throw new ProxyError(502, `upstream sent an invalid status (${res.statusCode})`);
    }
    const out = responseHeaders(res.headers);
    const follow = (r.method === 'GET' || r.method === 'HEAD') && !r.route.gitRefs;
    if (REDIRECT_STATUSES.has(res.statusCode) && out['location']) res.body.resume();
    const next = redirectTarget(res.statusCode, out['location'], url, hop, {
      // A redirect that is not followed goes to the client as it is: no hop is taken.
      max: follow ? o.maxRedirects : Number.POSITIVE_INFINITY,
      allowed: (u) => o.links.allowed(u),
      fail: (f) => new ProxyError(502, REDIRECT_FAULTS[f]),
    });
    if (next) {
      if (!follow) {
        out['location'] = o.links.proxied(next);
        return finish(o, r, { status: res.statusCode, headers: out, body: null, url }, true);
      }
      if (keep) {
        kept ??= {};
        for (const k of keep) if (out[k] !== undefined) kept[k] = out[k];
      }
      const d = decide(next.hostname, 'GET', next, o);
      if (!d.ok) throw new ProxyError(502, 'redirect to a path that is not allowed');
      if (o.viaCache && d.route.cacheKey) {
        // Another host: the client's credentials and cookies stay behind (as on any host change).
        const { authorization: _a, cookie: _c, ...rest } = r.headers;
        const up = await o.viaCache({ ...r, url: next, route: d.route, headers: rest, body: null });
        // The kept headers are the redirecting hop's: their links are made proxy-form here.
        if (kept?.['link']) kept['link'] = o.links.rewriteLink(kept['link'], url);
        for (const k of r.route.urlHeaders ?? []) if (kept?.[k]) kept[k] = o.links.rewriteUrl(kept[k]);
        // A copy: a cache hit's headers are prepared once and shared by every answer of that object.
        // Not one for the lane: this URL's answer rests on the redirect, which is asked each time.
        const { lane: _l, ...hit } = up;
        return { ...hit, headers: { ...kept, ...up.headers } };
      }
      htmlGuard ||= d.route.htmlGuard;
      verify = d.route.verify;
      if (verify) headers['accept-encoding'] = 'identity';
      url = next;
      continue;
    }
    const emptyBody = r.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
    if (emptyBody) res.body.resume();
    if (kept) for (const k in kept) out[k] ??= kept[k] as string;
    return finish(
      o,
      { ...r, route: { ...r.route, htmlGuard, verify } },
      {
        status: res.statusCode,
        headers: out,
        body: emptyBody ? null : res.body,
        url,
      },
    );
  }
}

async function finish(
  o: ForwardOptions,
  r: ForwardRequest,
  up: Upstream,
  redirect = false,
): Promise<Upstream> {
  const h = up.headers;
  if (!redirect && h['location']) h['location'] = o.links.rewriteHeader(h['location'], up.url);
  if (h['content-location']) h['content-location'] = o.links.rewriteHeader(h['content-location'], up.url);
  if (h['link']) h['link'] = o.links.rewriteLink(h['link'], up.url);
  for (const k of r.route.urlHeaders ?? []) if (h[k]) h[k] = o.links.rewriteUrl(h[k]);
  const type = (h['content-type'] ?? '').toLowerCase();
  if (r.route.htmlGuard && type.startsWith('text/html')) {
    up.body?.resume();
    const status = up.status === 200 ? 403 : up.status;
    const text =
      status === 403
        ? 'GitHub web pages are not served through this proxy\n'
        : status >= 300 && status < 400
          ? 'moved\n'
          : 'upstream error page withheld\n';
    // A redirect keeps its (already rewritten) Location: GitHub sends renamed-repo redirects as HTML.
    const kept: HeaderMap = h['location'] ? { location: h['location'] } : {};
    if (h['www-authenticate']) kept['www-authenticate'] = h['www-authenticate'];
    return {
      status,
      headers: { ...kept, 'content-type': 'text/plain; charset=utf-8' },
      body: null,
      text,
      url: up.url,
    };
  }
  const len = Number(h['content-length'] ?? Number.NaN);
  if (len > o.maxResponseBytes) {
    if (up.body) discard(up.body);
    throw new ProxyError(413, `upstream response exceeds ${humanBytes(o.maxResponseBytes)}`);
  }
  const types = r.route.rewriteTypes;
  const rewriting = r.route.rewrite && (!types || types.some((t) => type.startsWith(t)));
  // HEAD of a rewritten page: the upstream length and validators describe a different body.
  if (rewriting && r.method === 'HEAD' && up.status === 200) {
    delete h['content-length'];
    delete h['etag'];
  }
  if (rewriting && up.body && up.status === 200) {
    const raw = await readIndex(up.body, o.maxRewriteBytes);
    const enc = h['content-encoding'] ?? 'identity';
    // We asked for identity; gzip is undone (capped against bombs), anything else passes unchanged.
    if (enc !== 'identity' && enc !== 'gzip') return { ...up, headers: h, body: null, text: raw };
    const plain = enc === 'gzip' ? gunzipSync(raw, { maxOutputLength: o.maxRewriteBytes }) : raw;
    const rw = r.route.rewrite;
    const text =
      typeof rw === 'function'
        ? rw(plain, type, o.links)
        : rw === 'pypi'
          ? rewritePypi(plain, type, o.links)
          : rewriteLfs(plain, o.links);
    if (text !== null) {
      delete h['content-encoding'];
      delete h['etag'];
      h['content-length'] = String(Buffer.byteLength(text));
      return { ...up, headers: h, body: null, text };
    }
    return { ...up, headers: h, body: null, text: raw };
  }
  if (up.body && Number.isNaN(len)) up.body = capped(up.body, o.maxResponseBytes, 'upstream response');
  if (r.route.verify && up.body && up.status === 200) {
    const enc = h['content-encoding'] ?? 'identity';
    if (enc !== 'identity') {
      discard(up.body);
      throw new ProxyError(502, 'upstream sent an encoded object where its plain bytes were asked for');
    }
    up.body = verifiedBody(
      up.body,
      r.route.verify(),
      () => new ProxyError(502, 'upstream object does not match its hash'),
    );
  }
  return up;
}

/** A body to rewrite in memory; past the cap it is the upstream's fault (502), not the client's. */
async function readIndex(body: Readable, max: number): Promise<Buffer> {
  try {
    return await readCapped(body, max);
  } catch (err) {
    if (err instanceof BodyTooLarge) throw new ProxyError(502, `upstream index exceeds ${humanBytes(max)}`);
    throw err;
  }
}

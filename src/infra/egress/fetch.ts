// A Fetch-shaped function over an Egress client, for libraries that take a custom fetch (the OIDC
// client of the admin's single sign-on): their requests then keep every egress rule (address guard,
// resolve overrides, timeouts, extra CAs, the operator's proxy) and a response cap. Redirects are
// not followed (such libraries ask for 'manual'); the whole body is read before the Response is made,
// so it suits small answers (metadata, keys, tokens), not downloads.
import { readCapped } from './capped-body.ts';
import type { Egress } from './client.ts';

export interface FetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | URLSearchParams | ArrayBuffer | null | unknown;
  signal?: AbortSignal;
}

export type EgressFetch = (url: string, init?: FetchInit) => Promise<Response>;

const NO_BODY = new Set([101, 103, 204, 205, 304]);

export function egressFetch(http: Egress, maxBytes: number): EgressFetch {
  return async (url, init = {}) => {
    const u = new URL(url);
    let body: string | Uint8Array | undefined;
    const b = init.body;
    if (b instanceof URLSearchParams || typeof b === 'string') body = String(b);
    else if (b instanceof Uint8Array) body = b;
    else if (b instanceof ArrayBuffer) body = new Uint8Array(b);
    else if (b !== undefined && b !== null) throw new TypeError('egressFetch: unsupported body type');
    const res = await http.request({
      origin: u.origin,
      path: `${u.pathname}${u.search}`,
      method: (init.method ?? 'GET') as 'GET',
      headers: init.headers ?? {},
      ...(body === undefined ? {} : { body }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const buf = await readCapped(res.body, maxBytes);
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) headers.append(k, String(one));
    }
    const status = res.statusCode;
    return new Response(NO_BODY.has(status) ? null : new Uint8Array(buf), { status, headers });
  };
}

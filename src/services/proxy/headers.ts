// Header filtering both ways (docs/protocols/reverse-proxy.md §3, §4): hop-by-hop and identity headers
// never cross the proxy; Authorization travels only to the host the client addressed.
import type { IncomingHttpHeaders } from 'node:http';

const REQUEST_KEEP = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'user-agent',
  'range',
  'if-range',
  'if-modified-since',
  'if-none-match',
  'cache-control',
  'pragma',
  'content-type',
  'content-encoding',
  'content-length',
  'git-protocol',
  'authorization',
]);

const RESPONSE_KEEP = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'content-range',
  'accept-ranges',
  'etag',
  'last-modified',
  'cache-control',
  'expires',
  'vary',
  'content-disposition',
  'location',
  'content-location',
  'link',
  'www-authenticate',
  'retry-after',
  'date',
  'age',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-used',
  'x-ratelimit-resource',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'ratelimit-policy',
  'x-github-request-id',
  'x-pypi-last-serial',
  // Hugging Face Hub: the file behind a resolve URL, its Xet storage and the Hub's error codes
  // (clients read these; huggingface_hub refuses a download without X-Repo-Commit).
  'x-repo-commit',
  'x-linked-etag',
  'x-linked-size',
  'x-xet-hash',
  'x-xet-refresh-route',
  'x-xet-cas-url',
  'x-xet-access-token',
  'x-xet-token-expiration',
  'x-error-code',
  'x-error-message',
  'x-total-count',
  'npm-notice',
]);

export type HeaderMap = Record<string, string>;

/** True when a GET or HEAD sends header `name` upstream (when the client gave it). */
export function forwardedOnGet(name: string): boolean {
  return (
    REQUEST_KEEP.has(name) &&
    name !== 'content-length' &&
    name !== 'content-encoding' &&
    name !== 'content-type'
  );
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * Headers sent upstream: an allow-list (everything else, Cookie, Forwarded, X-Forwarded-*, CF-*,
 * Origin, Referer, hop-by-hop and Expect, is dropped). Content-Length goes only with a body the
 * proxy forwards as-is; chunked bodies are re-framed by undici.
 */
export function requestHeaders(h: IncomingHttpHeaders, opts: { withBody: boolean }): HeaderMap {
  // Most requests name no header in Connection: no set is built for them.
  const conn = first(h.connection);
  const named = conn
    ? new Set(
        conn
          .toLowerCase()
          .split(',')
          .map((s) => s.trim()),
      )
    : null;
  const out: HeaderMap = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined || !REQUEST_KEEP.has(k) || named?.has(k)) continue;
    if (!opts.withBody && (k === 'content-length' || k === 'content-encoding' || k === 'content-type'))
      continue;
    out[k] = first(v) as string;
  }
  return out;
}

/** Response headers relayed to the client, plus the proxy's own safety headers. */
export function responseHeaders(h: Record<string, string | string[] | undefined>): HeaderMap {
  const out: HeaderMap = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined || !RESPONSE_KEEP.has(k)) continue;
    out[k] = first(v) as string;
  }
  return out;
}

export const SAFETY_HEADERS: HeaderMap = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "sandbox; default-src 'none'",
  'x-robots-tag': 'noindex',
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'Content-Length, Content-Range, Content-Disposition, ETag, Last-Modified, Link, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, X-Xet-Hash, X-Error-Code, X-Error-Message',
};

// Requests to a registry: the stored token for the repository, a fresh one after a 401 challenge
// (one retry), and redirects (blob storage, mirrors) followed on allow-listed https hosts only, with
// Authorization dropped on any host change. Every hop goes through the proxy's guarded client.
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Egress } from '../../../../infra/egress/client.ts';
import { REDIRECT_STATUSES, redirectTarget } from '../../../../infra/egress/redirect.ts';
import type { AllowList } from '../../target.ts';
import type { UpstreamTokens } from './auth.ts';
import { ociError } from './errors.ts';
import type { ImageName } from './reference.ts';

export interface RegistryResponse {
  status: number;
  headers: Record<string, string>;
  body: Readable;
  url: URL;
}

function flat(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export class RegistryClient {
  private readonly agent: Egress;
  private readonly allow: AllowList;
  private readonly tokens: UpstreamTokens;
  private readonly maxRedirects: number;

  constructor(agent: Egress, allow: AllowList, tokens: UpstreamTokens, maxRedirects: number) {
    this.agent = agent;
    this.allow = allow;
    this.tokens = tokens;
    this.maxRedirects = maxRedirects;
  }

  /** `method` on `/v2/<repo>/<rest>` of the image's registry; the body is the caller's to consume. */
  async request(
    name: ImageName,
    method: 'GET' | 'HEAD',
    rest: string,
    headers: Record<string, string>,
    signal?: Dispatcher.RequestOptions['signal'],
  ): Promise<RegistryResponse> {
    let url = new URL(`https://${name.host}/v2/${name.repo}/${rest}`);
    const h: Record<string, string> = { 'user-agent': 'devutil-oci', ...headers };
    const auth = this.tokens.cached(name.host, name.repo);
    if (auth) h['authorization'] = auth;
    let retried = false;
    for (let hop = 0; ; ) {
      if (url.hostname !== name.host) delete h['authorization'];
      const res = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        headers: h,
        ...(signal ? { signal } : {}),
      });
      const out = flat(res.headers);
      if (res.statusCode === 401 && !retried && url.hostname === name.host && out['www-authenticate']) {
        res.body.resume();
        retried = true;
        h['authorization'] = await this.tokens.answer(name.host, name.repo, out['www-authenticate']);
        continue;
      }
      if (REDIRECT_STATUSES.has(res.statusCode) && out['location']) res.body.resume();
      const from = url;
      const next = redirectTarget(res.statusCode, out['location'], from, hop, {
        max: this.maxRedirects,
        allowed: (u) => this.allow.allowsUrl(u),
        fail: (f, target) =>
          ociError(
            502,
            'UNAVAILABLE',
            f === 'invalid'
              ? `${from.hostname} sent an invalid redirect`
              : f === 'not-allowed'
                ? `redirect to a host that is not allowed: ${target?.hostname}`
                : 'too many redirects',
          ),
      });
      if (next) {
        hop++;
        url = next;
        continue;
      }
      return { status: res.statusCode, headers: out, body: res.body, url };
    }
  }
}

/**
 * The error for an upstream answer that is not the object asked for. 401 after a token was
 * presented is how registries answer for private and missing repositories alike.
 */
export function upstreamRefusal(status: number, headers: Record<string, string>, what: string): Error {
  if (status === 404)
    return ociError(
      404,
      what.startsWith('blob') ? 'BLOB_UNKNOWN' : 'MANIFEST_UNKNOWN',
      `${what} not found upstream`,
    );
  if (status === 401 || status === 403)
    return ociError(
      403,
      'DENIED',
      `the registry denied access to ${what} (it may not exist or not be public)`,
    );
  if (status === 429)
    return ociError(429, 'TOOMANYREQUESTS', 'the registry is rate limiting this server; try again later', {
      headers: {
        'retry-after':
          headers['retry-after'] && /^\d+$/.test(headers['retry-after']) ? headers['retry-after'] : '60',
      },
    });
  return ociError(502, 'UNAVAILABLE', `the registry answered ${status} for ${what}`);
}

// The token dance on both sides. Toward clients: /v2/ answers 401 with a Bearer challenge whose
// realm is this server's /v2/token, which hands out short-lived tokens (for anyone, or, with
// DEVUTIL_PROXY_SECRET, only for a Basic password equal to the secret: `docker login`). Toward the
// registries: a 401 challenge from upstream names a realm, which must be on the profile's allow
// list; an anonymous token (or, for Docker Hub, one for the operator's account) is fetched there
// once per repository and reused until it expires. No token or credential is ever logged.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SingleFlight } from '../../../../infra/cache/single-flight.ts';
import { readCapped } from '../../../../infra/egress/capped-body.ts';
import type { Egress } from '../../../../infra/egress/client.ts';
import type { AllowList } from '../../target.ts';
import { ociError } from './errors.ts';

/** Lifetime of the tokens this server issues (clients fetch a new one when it runs out). */
export const CLIENT_TOKEN_SEC = 300;

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest();

export class ClientTokens {
  /** No secret: every client may pull, tokens only complete the dance clients expect. */
  readonly open: boolean;
  private readonly key: Buffer;
  private readonly secret: string;

  constructor(secret: string) {
    this.open = secret === '';
    this.secret = secret;
    // With a secret every instance derives the same key, so a token from one is good on all.
    this.key = secret ? sha(`devutil oci token\0${secret}`) : randomBytes(32);
  }

  /** A token for /v2/token, or null when the Basic credentials do not carry the secret. */
  issue(authorization: string | undefined, now: number): { token: string; expiresIn: number } | null {
    if (!this.open) {
      const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? '');
      const pair = m?.[1] ? Buffer.from(m[1], 'base64').toString('utf8') : '';
      const password = pair.slice(pair.indexOf(':') + 1);
      if (!m || !pair.includes(':') || !timingSafeEqual(sha(password), sha(this.secret))) return null;
    }
    const exp = Math.floor(now / 1000) + CLIENT_TOKEN_SEC;
    return { token: `dv1.${exp}.${this.mac(exp)}`, expiresIn: CLIENT_TOKEN_SEC };
  }

  /** A Bearer header carrying a token this server issued that has not expired. */
  valid(authorization: string | undefined, now: number): boolean {
    const m = /^Bearer\s+dv1\.(\d{1,12})\.([A-Za-z0-9_-]{43})\s*$/.exec(authorization ?? '');
    if (!m?.[1] || !m[2]) return false;
    const exp = Number(m[1]);
    if (exp * 1000 < now) return false;
    return timingSafeEqual(Buffer.from(m[2]), Buffer.from(this.mac(exp)));
  }

  private mac(exp: number): string {
    return createHmac('sha256', this.key).update(`dv1.${exp}`).digest('base64url');
  }
}

/** The WWW-Authenticate value that sends a client to this server's token endpoint. */
export function challenge(realm: string, scope?: string): string {
  return `Bearer realm="${realm}",service="devutil"${scope ? `,scope="${scope}"` : ''}`;
}

/** Parameters of an upstream challenge (RFC 9110 11.6.1 auth-params; quoted strings unescaped). */
export function parseChallenge(header: string): { scheme: string; params: Record<string, string> } | null {
  const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(header);
  if (!m?.[1]) return null;
  const params: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*,?/gy;
  const rest = m[2] ?? '';
  re.lastIndex = 0;
  while (re.lastIndex < rest.length) {
    const p = re.exec(rest);
    if (!p?.[1]) break;
    params[p[1].toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? '');
  }
  return { scheme: m[1].toLowerCase(), params };
}

/** Largest token answer read from a realm (Docker Hub's are about 4 KiB). */
const MAX_TOKEN_BODY = 64 * 1024;
/** Tokens are renewed this long before they expire, so none runs out mid-request. */
const MARGIN_SEC = 30;

export interface Credential {
  user: string;
  token: string;
}

export class UpstreamTokens {
  private tokens = new Map<string, { header: string; until: number }>();
  private flights = new SingleFlight<string>();
  private readonly agent: Egress;
  private readonly allow: AllowList;
  private readonly creds: ReadonlyMap<string, Credential>;
  private readonly now: () => number;

  constructor(agent: Egress, allow: AllowList, creds: ReadonlyMap<string, Credential>, now: () => number) {
    this.agent = agent;
    this.allow = allow;
    this.creds = creds;
    this.now = now;
  }

  /** The Authorization header known for `host` + `repo`, if any. */
  cached(host: string, repo: string): string | undefined {
    const t = this.tokens.get(`${host}\n${repo}`);
    if (!t) return undefined;
    if (t.until > this.now()) return t.header;
    this.tokens.delete(`${host}\n${repo}`);
    return undefined;
  }

  /** After a 401 from `host` with `header` (WWW-Authenticate): the header to retry with. */
  async answer(host: string, repo: string, header: string): Promise<string> {
    const c = parseChallenge(header);
    const key = `${host}\n${repo}`;
    if (c?.scheme === 'basic') {
      const b = this.basic(host);
      if (b) {
        this.tokens.set(key, { header: b, until: this.now() + 3600_000 });
        return b;
      }
      throw ociError(403, 'DENIED', `${host} asks for credentials this server does not have`);
    }
    if (c?.scheme !== 'bearer' || !c.params['realm'])
      throw ociError(502, 'UNAVAILABLE', `${host} sent an authentication challenge that is not understood`);
    return this.flights.run(key, async () => {
      const { header: h, ttlSec } = await this.fetchToken(host, repo, c.params);
      this.tokens.set(key, { header: h, until: this.now() + Math.max(10, ttlSec - MARGIN_SEC) * 1000 });
      // Bounded: entries of repositories nobody asks for again are dropped once stale.
      if (this.tokens.size > 10_000)
        for (const [k, v] of this.tokens) if (v.until <= this.now()) this.tokens.delete(k);
      return h;
    });
  }

  private basic(host: string): string | undefined {
    const c = this.creds.get(host);
    return c ? `Basic ${Buffer.from(`${c.user}:${c.token}`).toString('base64')}` : undefined;
  }

  private async fetchToken(
    host: string,
    repo: string,
    p: Record<string, string>,
  ): Promise<{ header: string; ttlSec: number }> {
    let realm: URL;
    try {
      realm = new URL(p['realm'] ?? '');
    } catch {
      throw ociError(502, 'UNAVAILABLE', `${host} sent an invalid token realm`);
    }
    // The realm is upstream input: the upstream URL check of the proxy's links and redirects
    // (https on the allow list, no port, userinfo, IP literal or trailing dot).
    if (!this.allow.allowsUrl(realm))
      throw ociError(502, 'UNAVAILABLE', `token realm of ${host} is not allowed: ${realm.hostname}`);
    if (p['service']) realm.searchParams.set('service', p['service']);
    realm.searchParams.set('scope', `repository:${repo}:pull`);
    const headers: Record<string, string> = { 'user-agent': 'devutil-oci', accept: 'application/json' };
    const basic = this.basic(host);
    if (basic) headers['authorization'] = basic;
    const res = await this.agent.request({
      origin: realm.origin,
      path: `${realm.pathname}${realm.search}`,
      method: 'GET',
      headers,
    });
    if (res.statusCode !== 200) {
      res.body.resume();
      if (res.statusCode === 401 || res.statusCode === 403)
        throw ociError(
          502,
          'UNAVAILABLE',
          `token service of ${host} refused the request (${res.statusCode})`,
        );
      if (res.statusCode === 429)
        throw ociError(429, 'TOOMANYREQUESTS', `token service of ${host} is rate limiting`, {
          headers: { 'retry-after': String(res.headers['retry-after'] ?? 60) },
        });
      throw ociError(502, 'UNAVAILABLE', `token service of ${host} answered ${res.statusCode}`);
    }
    let body: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse((await readCapped(res.body, MAX_TOKEN_BODY)).toString('utf8'));
    } catch {
      throw ociError(502, 'UNAVAILABLE', `token service of ${host} sent an unreadable answer`);
    }
    const token = typeof body.token === 'string' ? body.token : body.access_token;
    if (typeof token !== 'string' || token === '' || /[\s\x00-\x1f]/.test(token))
      throw ociError(502, 'UNAVAILABLE', `token service of ${host} sent no token`);
    const ttl = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 60;
    return { header: `Bearer ${token}`, ttlSec: Math.min(ttl, 3600) };
  }
}

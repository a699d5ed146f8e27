// Single sign-on for the admin dashboard: OpenID Connect authorization code flow with PKCE, state
// and nonce, through openid-client (loaded only when an issuer is configured). Sign-ins in progress
// and sessions live in the shared-state layer, so any instance can finish a sign-in another began and
// every instance knows every session. Only digests of the cookies' random ids are stored; the
// client secret, codes and tokens are never logged (the secret is a configured secret, redacted
// wherever it appears). Framework-free: index.ts maps these calls to routes and cookies.
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { missingPackageMessage } from '../../infra/config/extras.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { type EgressFetch, egressFetch } from '../../infra/egress/fetch.ts';
import {
  AppError,
  badGateway,
  badRequest,
  forbidden,
  tooMany,
  unauthorized,
} from '../../infra/http/errors.ts';
import type { SharedState } from '../../infra/state/state.ts';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** '' = public client (PKCE only). */
  clientSecret: string;
  redirectUrl: string;
  scopes: readonly string[];
  allowedUsers: readonly string[];
  allowedGroups: readonly string[];
  groupsClaim: string;
  sessionTtlMs: number;
  /** Sign-ins begun per LOGIN_TTL_MS window, all instances together. */
  pendingLogins: number;
  /** http issuers are accepted only for a host the operator mapped (DEVUTIL_EGRESS_RESOLVE). */
  allowHttp: boolean;
}

/** Who signed in, as the provider said. */
export interface Identity {
  sub: string;
  email: string | null;
  emailVerified: boolean;
  groups: string[];
}

/** Time a sign-in may take at the provider. */
export const LOGIN_TTL_MS = 10 * 60_000;
/** Largest answer read from the provider (metadata, keys, tokens, userinfo). */
const MAX_ANSWER = 1 << 20;

const digest = (id: string) => createHash('sha256').update(id).digest('base64url');
const newId = () => randomBytes(32).toString('base64url');
/** Ids this server made: 43 base64url characters. Anything else is not looked up. */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * True when the identity is on the allowed lists: its subject, or its e-mail address when the
 * provider verified it (an unverified address is whatever the user typed), or one of its groups.
 */
export function admits(s: Pick<OidcSettings, 'allowedUsers' | 'allowedGroups'>, id: Identity): boolean {
  const users = new Set(s.allowedUsers.map((u) => (u.includes('@') ? u.toLowerCase() : u)));
  if (users.has(id.sub)) return true;
  if (id.email && id.emailVerified && users.has(id.email.toLowerCase())) return true;
  return id.groups.some((g) => s.allowedGroups.includes(g));
}

/**
 * The path to return to after sign-in: a path on this server under /admin, nothing that a browser
 * could read as another origin (//host, /\host, a scheme) or that carries control characters.
 */
export function safeReturnTo(raw: unknown): string | null {
  if (raw === undefined) return '/admin';
  if (typeof raw !== 'string' || raw.length > 512) return null;
  if (!/^\/admin(?:[/?#]|$)/.test(raw)) return null;
  if (/[\\\s\u0000-\u001f\u007f]/.test(raw) || raw.includes('//') || /(^|\/)\.\.?(\/|$|[?#])/.test(raw))
    return null;
  return raw;
}

function groupsOf(claims: Record<string, unknown>, claim: string): string[] {
  const v = claims[claim];
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((g): g is string => typeof g === 'string') : [];
}

type Client = typeof import('openid-client');

/** One sign-in in progress, kept under the digest of its cookie id. */
interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
}

export class OidcLogin {
  private client: Promise<Client> | null = null;
  private discovered: Promise<import('openid-client').Configuration> | null = null;
  private readonly fetch: EgressFetch;
  private readonly s: OidcSettings;
  private readonly state: SharedState;
  private readonly log: Logger;

  constructor(s: OidcSettings, http: Egress, state: SharedState, log: Logger) {
    this.s = s;
    this.state = state;
    this.log = log;
    this.fetch = egressFetch(http, MAX_ANSWER);
  }

  get sessionTtlMs(): number {
    return this.s.sessionTtlMs;
  }

  /** Loads openid-client now, so a missing optional dependency stops start-up, not a sign-in. */
  async load(): Promise<void> {
    this.client ??= import('openid-client').catch((err: unknown) => {
      throw new Error(`DEVUTIL_ADMIN_OIDC_ISSUER is set but ${missingPackageMessage('openid-client')}`, {
        cause: err,
      });
    });
    await this.client;
  }

  /** The provider's metadata, discovered on first use and kept; a failure is retried next time. */
  private async config(): Promise<import('openid-client').Configuration> {
    await this.load();
    const c = await this.client!;
    this.discovered ??= (async () => {
      const auth = this.s.clientSecret ? c.ClientSecretBasic(this.s.clientSecret) : c.None();
      const conf = await c.discovery(
        new URL(this.s.issuer),
        this.s.clientId,
        { redirect_uris: [this.s.redirectUrl], response_types: ['code'] },
        auth,
        {
          [c.customFetch]: this.fetch as import('openid-client').CustomFetch,
          ...(this.s.allowHttp ? { execute: [c.allowInsecureRequests] } : {}),
          timeout: 10,
        },
      );
      return conf;
    })();
    try {
      return await this.discovered;
    } catch (err) {
      this.discovered = null;
      this.log.warn({ svc: 'admin', err }, 'oidc discovery failed');
      throw badGateway('the identity provider could not be reached; try again shortly', 'OIDC_UNREACHABLE');
    }
  }

  /** Starts a sign-in: the provider's authorization URL and the id of the browser's sign-in cookie. */
  async begin(returnTo: string): Promise<{ url: string; loginId: string }> {
    // The total cap of sign-ins in progress (the per-client share is the admin rate limit).
    // A window that starts with its first sign-in, so a burst is never split by the clock.
    const begun = await this.state.count('admin:oidc:begun', 1, {
      ttlMs: LOGIN_TTL_MS,
      max: this.s.pendingLogins,
    });
    if (!begun.ok)
      throw tooMany(
        'too many sign-ins in progress; try again later',
        Math.max(1, Math.ceil(begun.ttlMs / 1000)),
      );
    const conf = await this.config();
    const c = await this.client!;
    const p: Pending = {
      state: c.randomState(),
      nonce: c.randomNonce(),
      verifier: c.randomPKCECodeVerifier(),
      returnTo,
    };
    const loginId = newId();
    await this.state.hashSet(`admin:oidc:login:${digest(loginId)}`, { ...p }, LOGIN_TTL_MS);
    const url = c.buildAuthorizationUrl(conf, {
      redirect_uri: this.s.redirectUrl,
      scope: [...new Set(['openid', ...this.s.scopes])].join(' '),
      state: p.state,
      nonce: p.nonce,
      code_challenge: await c.calculatePKCECodeChallenge(p.verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, loginId };
  }

  /**
   * Finishes a sign-in from the callback's query: checks it belongs to this browser's sign-in
   * (cookie id, state), that it is used once, exchanges the code (PKCE verifier, nonce, ID token
   * signature and audience checked by openid-client), and admits the user or not.
   */
  async finish(
    loginId: string | undefined,
    query: URLSearchParams,
  ): Promise<{ sessionId: string; returnTo: string; user: string }> {
    for (const name of ['code', 'state', 'iss', 'error'])
      if (query.getAll(name).length > 1)
        throw badRequest(`the sign-in answer repeats ${name}`, 'OIDC_BAD_CALLBACK');
    const error = query.get('error');
    if (error !== null) {
      // What the provider said, in its own registered words only (no free text from the URL).
      const known = /^[a-z_]{1,64}$/.test(error) ? error : 'error';
      throw unauthorized(`the identity provider refused the sign-in (${known})`, 'OIDC_REFUSED');
    }
    const state = query.get('state');
    const code = query.get('code');
    if (!state || !code) throw badRequest('the sign-in answer lacks its code or state', 'OIDC_BAD_CALLBACK');
    if (!loginId || !ID_SHAPE.test(loginId))
      throw badRequest('no sign-in is in progress in this browser; open /admin again', 'OIDC_NO_LOGIN');
    const key = `admin:oidc:login:${digest(loginId)}`;
    const [raw] = await this.state.hashGet([key]);
    const p = raw as Partial<Pending> | undefined;
    if (!p?.state || !p.nonce || !p.verifier || !p.returnTo)
      throw badRequest('this sign-in expired or was already used; open /admin again', 'OIDC_NO_LOGIN');
    if (p.state !== state)
      throw badRequest('the sign-in answer does not belong to this sign-in (state)', 'OIDC_STATE');
    // Once: a second callback for the same sign-in (a replayed code) stops here on every instance.
    const once = await this.state.count(`admin:oidc:used:${digest(loginId)}`, 1, {
      ttlMs: LOGIN_TTL_MS,
      max: 1,
    });
    if (!once.ok)
      throw badRequest('this sign-in expired or was already used; open /admin again', 'OIDC_NO_LOGIN');
    await this.state.hashDel(key, ['state', 'nonce', 'verifier', 'returnTo']);

    const conf = await this.config();
    const c = await this.client!;
    const current = new URL(this.s.redirectUrl);
    current.search = query.toString();
    let identity: Identity;
    try {
      const tokens = await c.authorizationCodeGrant(conf, current, {
        pkceCodeVerifier: p.verifier,
        expectedState: p.state,
        expectedNonce: p.nonce,
        idTokenExpected: true,
      });
      const claims: Record<string, unknown> = { ...tokens.claims() };
      const sub = String(claims['sub']);
      // The groups (and often the e-mail) may be only in the userinfo answer.
      if (conf.serverMetadata().userinfo_endpoint && tokens.access_token) {
        const info = await c.fetchUserInfo(conf, tokens.access_token, sub);
        for (const [k, v] of Object.entries(info)) if (!(k in claims)) claims[k] = v;
      }
      identity = {
        sub,
        email: typeof claims['email'] === 'string' ? claims['email'] : null,
        emailVerified: claims['email_verified'] === true || claims['email_verified'] === 'true',
        groups: groupsOf(claims, this.s.groupsClaim),
      };
    } catch (err) {
      throw this.classify(err);
    }
    const user = identity.email && identity.emailVerified ? identity.email : identity.sub;
    if (!admits(this.s, identity)) {
      this.log.warn({ svc: 'admin', user }, 'oidc sign-in refused: not on the allowed lists');
      throw forbidden(`${user} may not use this dashboard`, 'OIDC_NOT_ALLOWED');
    }
    const sessionId = newId();
    await this.state.hashSet(
      `admin:session:${digest(sessionId)}`,
      {
        sub: identity.sub,
        email: identity.email ?? '',
        emailVerified: String(identity.emailVerified),
        groups: JSON.stringify(identity.groups),
        expires: String(Date.now() + this.s.sessionTtlMs),
      },
      this.s.sessionTtlMs,
    );
    this.log.info({ svc: 'admin', user }, 'oidc sign-in');
    return { sessionId, returnTo: p.returnTo, user };
  }

  /**
   * The session's identity when it is live and still on the allowed lists (a user taken off them
   * is out at the next request once the instances run the new settings); else null.
   */
  async session(sessionId: string | undefined): Promise<Identity | null> {
    if (!sessionId || !ID_SHAPE.test(sessionId)) return null;
    const [h] = await this.state.hashGet([`admin:session:${digest(sessionId)}`]);
    if (!h?.['sub'] || Number(h['expires']) <= Date.now()) return null;
    let groups: string[] = [];
    try {
      const g: unknown = JSON.parse(h['groups'] ?? '[]');
      if (Array.isArray(g)) groups = g.filter((x): x is string => typeof x === 'string');
    } catch {}
    const id: Identity = {
      sub: h['sub'],
      email: h['email'] || null,
      emailVerified: h['emailVerified'] === 'true',
      groups,
    };
    return admits(this.s, id) ? id : null;
  }

  async end(sessionId: string | undefined): Promise<void> {
    if (!sessionId || !ID_SHAPE.test(sessionId)) return;
    await this.state.hashDel(`admin:session:${digest(sessionId)}`, [
      'sub',
      'email',
      'emailVerified',
      'groups',
      'expires',
    ]);
  }

  /** What a failed code exchange means for the browser: the provider down (502) or a bad answer (401). */
  private classify(err: unknown): AppError {
    if (err instanceof AppError) return err;
    const e = err as { name?: string; code?: string; error?: string; cause?: unknown };
    const name = e?.name ?? '';
    // Our fetch failed: network, timeout, guard, oversized answer.
    const network =
      name === 'TypeError' ||
      name === 'BlockedAddressError' ||
      name === 'BodyTooLarge' ||
      (typeof e?.code === 'string' && (e.code.startsWith('UND_ERR') || /^E[A-Z]+$/.test(e.code)));
    if (network) {
      this.log.warn({ svc: 'admin', err }, 'oidc token exchange failed');
      return badGateway('the identity provider could not be reached; try again shortly', 'OIDC_UNREACHABLE');
    }
    this.log.warn(
      { svc: 'admin', err: { type: name, code: e?.code, error: e?.error } },
      'oidc sign-in rejected',
    );
    return unauthorized('the sign-in could not be verified; open /admin to sign in again', 'OIDC_INVALID');
  }
}

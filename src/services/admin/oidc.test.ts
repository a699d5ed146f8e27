// The single sign-on rules without a provider: who is admitted, which return paths are accepted,
// the settings refused at start-up, the callback URL masked in logs, and the callback checks that
// come before any exchange with the provider (a sign-in used once, state bound to the browser).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';
import { ConfigError, loadConfig } from '../../config.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { AppError } from '../../infra/http/errors.ts';
import { redact } from '../../infra/observe/redact.ts';
import { MemoryState } from '../../infra/state/memory.ts';
import { admits, OidcLogin, type OidcSettings, safeReturnTo } from './oidc.ts';

const lists = { allowedUsers: ['Ops@Example.com', 'sub-123'], allowedGroups: ['admins'] };
const who = (
  o: Partial<{ sub: string; email: string | null; emailVerified: boolean; groups: string[] }>,
) => ({
  sub: 'someone',
  email: null,
  emailVerified: false,
  groups: [],
  ...o,
});

describe('admin single sign-on rules', { timeout: 30_000 }, () => {
  it('admits by subject, by verified e-mail (any case) or by group, and nobody else', () => {
    assert.equal(admits(lists, who({ sub: 'sub-123' })), true);
    assert.equal(admits(lists, who({ email: 'ops@example.COM', emailVerified: true })), true);
    assert.equal(admits(lists, who({ groups: ['users', 'admins'] })), true);
    assert.equal(admits(lists, who({ email: 'ops@example.com', emailVerified: false })), false, 'unverified');
    assert.equal(admits(lists, who({ sub: 'SUB-123' })), false, 'subjects are exact');
    assert.equal(admits(lists, who({ groups: ['Admins'] })), false, 'groups are exact');
    assert.equal(
      admits(lists, who({ email: 'other@example.com', emailVerified: true, groups: ['users'] })),
      false,
    );
  });

  it('returns only to paths under /admin on this server', () => {
    assert.equal(safeReturnTo(undefined), '/admin');
    for (const ok of ['/admin', '/admin?window=day', '/admin#traffic', '/admin/'])
      assert.equal(safeReturnTo(ok), ok);
    for (const bad of [
      '',
      '/',
      '/adminx',
      '//evil.example',
      '/admin//evil.example',
      '/\\evil.example',
      '/admin\\..\\x',
      'https://evil.example/admin',
      '/admin/../api',
      '/admin/./x',
      '/admin\r\nx: y',
      '/admin\u0000',
      `/admin?${'a'.repeat(600)}`,
      ['/admin'],
    ])
      assert.equal(safeReturnTo(bad), null, JSON.stringify(bad));
  });

  it('refuses incomplete or unsafe settings at start-up, naming the variable', () => {
    const base = { DEVUTIL_ADMIN_OIDC_ISSUER: 'https://id.example.com/realms/ops' };
    const refused = (env: Record<string, string>, re: RegExp) =>
      assert.throws(
        () => loadConfig({ env }),
        (e: unknown) => e instanceof ConfigError && re.test(e.message),
      );
    refused(
      { ...base, DEVUTIL_ADMIN_OIDC_ALLOWED_USERS: 'a@example.com' },
      /DEVUTIL_ADMIN_OIDC_CLIENT_ID: required/,
    );
    refused(
      { ...base, DEVUTIL_ADMIN_OIDC_CLIENT_ID: 'devutil' },
      /DEVUTIL_ADMIN_OIDC_ALLOWED_USERS: set it or/,
    );
    refused(
      {
        DEVUTIL_ADMIN_OIDC_ISSUER: 'http://id.example.com',
        DEVUTIL_ADMIN_OIDC_CLIENT_ID: 'devutil',
        DEVUTIL_ADMIN_OIDC_ALLOWED_GROUPS: 'ops',
      },
      /DEVUTIL_ADMIN_OIDC_ISSUER: must be https/,
    );
    refused({ ...base, DEVUTIL_ADMIN_OIDC_GROUPS_CLAIM: 'a b' }, /DEVUTIL_ADMIN_OIDC_GROUPS_CLAIM/);
    const { config } = loadConfig({
      env: {
        DEVUTIL_ADMIN_OIDC_ISSUER: 'http://id.test:8443',
        DEVUTIL_EGRESS_RESOLVE: 'id.test=127.0.0.1:8443',
        DEVUTIL_ADMIN_OIDC_CLIENT_ID: 'devutil',
        DEVUTIL_ADMIN_OIDC_ALLOWED_GROUPS: 'ops',
        DEVUTIL_ADMIN_OIDC_SESSION_TTL_MS: '12h',
      },
    });
    assert.equal(config.admin.oidcSessionTtlMs, 12 * 3_600_000);
    assert.deepEqual(config.admin.oidcScopes, ['openid', 'email', 'profile']);
    assert.equal(config.admin.token, '', 'single sign-on without a token is allowed');
  });

  it('masks the callback query (code, state) in logged URLs', () => {
    const line = redact('GET /admin/oidc/callback?code=abcdefghijklmnop&state=qrstuvwxyz&iss=x 400');
    assert.equal(line, 'GET /admin/oidc/callback?[redacted] 400');
  });

  describe('callback checks before the provider is asked', () => {
    const settings: OidcSettings = {
      issuer: 'https://id.example.com',
      clientId: 'devutil',
      clientSecret: '',
      redirectUrl: 'https://devutil.example.com/admin/oidc/callback',
      scopes: ['openid'],
      allowedUsers: ['a@example.com'],
      allowedGroups: [],
      groupsClaim: 'groups',
      sessionTtlMs: 60_000,
      pendingLogins: 100,
      allowHttp: false,
    };
    // Never reached: every case below is decided before the provider is asked.
    const unreachable: Egress = {
      request: () => Promise.reject(new Error('the provider must not be asked')),
      close: async () => {},
    };
    const login = new OidcLogin(settings, unreachable, new MemoryState(), pino({ level: 'silent' }));
    const status = async (id: string | undefined, q: string) => {
      try {
        await login.finish(id, new URLSearchParams(q));
        return 0;
      } catch (e) {
        assert.ok(e instanceof AppError, String(e));
        return e.status;
      }
    };

    it('answers 400/401 to malformed callbacks and unknown sign-ins', async () => {
      const id = 'x'.repeat(43);
      assert.equal(await status(id, 'code=a&code=b&state=s'), 400);
      assert.equal(await status(id, 'code=a&state=s&state=t'), 400);
      assert.equal(await status(id, 'code=a&iss=a&iss=b&state=s'), 400);
      assert.equal(await status(id, 'state=s'), 400);
      assert.equal(await status(id, 'code=a'), 400);
      assert.equal(await status(id, 'error=access_denied'), 401);
      assert.equal(await status(undefined, 'code=a&state=s'), 400);
      assert.equal(await status('short', 'code=a&state=s'), 400);
      assert.equal(await status(id, 'code=a&state=s'), 400, 'no such sign-in');
    });

    it('knows no session for a missing, malformed or unknown id, and ending one is harmless', async () => {
      assert.equal(await login.session(undefined), null);
      assert.equal(await login.session('../../x'), null);
      assert.equal(await login.session('y'.repeat(43)), null);
      await login.end('y'.repeat(43));
    });
  });

  it('answers 502 in plain text while the provider cannot be reached, 429 past the cap of sign-ins in progress, and logs neither secret', async () => {
    const logs = new LogCapture();
    const secret = testSecret('oidc-secret-');
    const token = testSecret('admin-token-');
    const app = await buildTestServer({
      logs,
      env: {
        DEVUTIL_ADMIN_TOKEN: token,
        DEVUTIL_ADMIN_OIDC_ISSUER: 'http://idp.test',
        DEVUTIL_EGRESS_RESOLVE: `idp.test=127.0.0.1:${CLOSED_PORT}`,
        DEVUTIL_ADMIN_OIDC_CLIENT_ID: 'devutil',
        DEVUTIL_ADMIN_OIDC_CLIENT_SECRET: secret,
        DEVUTIL_ADMIN_OIDC_ALLOWED_USERS: 'a@example.com',
        DEVUTIL_ADMIN_OIDC_PENDING_LOGINS: '10',
        DEVUTIL_ADMIN_RATE_LIMIT: 'off',
      },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const r = await app.inject({ url: '/admin' });
        assert.equal(r.statusCode, 502);
        assert.match(r.headers['content-type'] as string, /^text\/plain/);
        assert.equal(r.body, 'the identity provider could not be reached; try again shortly\n');
      }
      // The total cap of sign-ins in progress (10 here, 2 used above): then 429 with Retry-After.
      for (let i = 2; i < 10; i++) assert.equal((await app.inject({ url: '/admin' })).statusCode, 502);
      const capped = await app.inject({ url: '/admin' });
      assert.equal(capped.statusCode, 429);
      assert.equal(capped.body, 'too many sign-ins in progress; try again later\n');
      assert.ok(Number(capped.headers['retry-after']) >= 1);
      // The token still opens the figures while the provider is away.
      const s = await app.inject({
        url: '/rest/api/v1/admin/stats',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(s.statusCode, 200);
      assert.match(logs.text(), /oidc discovery failed/);
      assert.doesNotMatch(logs.text(), new RegExp(`${secret}|${token}`));
    } finally {
      await app.close();
    }
  });
});

// Single sign-on to /admin against a real OpenID Connect provider (oidc-provider on loopback, its
// development sign-in form), walked by a cookie-keeping HTTP client as a browser would: an allowed
// user (by e-mail, and another by group through the userinfo answer) reaches the dashboard, a user
// outside the lists gets 403 in admin's envelope, a browser without a session is sent to the
// provider, logout ends the session everywhere, the bearer token keeps working for scripts, and the
// callback answers hostile input (missing, repeated or foreign parameters, replays, forged codes,
// open redirects) with a clear 400/401/403 and no stack. Nothing secret reaches the logs. Two nodes
// on one real Redis share sign-ins and sessions: begun on one, finished on the other, ended anywhere.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startProvider, type TestProvider } from '../fixtures/oidc/provider.ts';
import { signInAtProvider } from '../fixtures/oidc/sign-in.ts';
import { type Answer, CookieClient } from '../helpers/cookie-client.ts';
import { freePort } from '../helpers/ports.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { testSecret } from '../helpers/secrets.ts';
import { buildTestServer, LogCapture, type Running, startTestServer } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { launch } from './web-browser.ts';

const TOKEN = testSecret('admin-oidc-token-');
const CLIENT_SECRET = testSecret('oidc-client-secret-');
const CLIENT_ID = 'devutil-admin';
const STATS = '/rest/api/v1/admin/stats';
const SESSION = 'devutil-admin';
const LOGIN = 'devutil-admin-login';
/** The public URL of a node behind TLS (reached here through inject()). */
const HTTPS_BASE = 'https://admin.example.com';

const ACCOUNTS = [
  { id: 'alice', email: 'alice@example.com', groups: ['staff'] },
  { id: 'bob', email: 'bob@example.com', groups: ['staff'] },
  { id: 'carol', email: 'carol@example.com', groups: ['ops'] },
  // Claims an allowed address the provider did not verify: not admitted by it.
  { id: 'mallory', email: 'alice@example.com', emailVerified: false, groups: [] },
];

// The whole file's cases share one deadline per describe: a Chromium sign-in alone took 57 s of the
// former 60 s at load 20 (CI), and the cases after it were cancelled.
describe('admin single sign-on (OIDC) against oidc-provider', { timeout: 300_000 }, () => {
  const logs = new LogCapture();
  let idp: TestProvider;
  let dev: Running;
  let base: string;
  const browser = () => new CookieClient({ [idp.host]: `127.0.0.1:${idp.port}` });

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUris: [`${base}/admin/oidc/callback`, `${HTTPS_BASE}/admin/oidc/callback`],
      accounts: ACCOUNTS,
    });
    try {
      dev = await startTestServer({
        logs,
        overrides: {
          server: { port },
          egress: { resolve: [idp.resolve] },
          admin: {
            token: TOKEN,
            rateLimit: '1000/min',
            oidcIssuer: idp.issuer,
            oidcClientId: CLIENT_ID,
            oidcClientSecret: CLIENT_SECRET,
            oidcScopes: ['openid', 'email', 'groups'],
            oidcAllowedUsers: ['Alice@Example.com'],
            oidcAllowedGroups: ['ops'],
          },
        },
      });
    } catch (err) {
      await idp.close();
      throw err;
    }
  });
  after(async () => {
    await dev?.close();
    await idp?.close();
  });

  it('sends a browser without a session to the provider with PKCE (S256), state and nonce', async () => {
    const c = browser();
    const r = await c.send('GET', `${base}/admin`);
    assert.equal(r.status, 302);
    const to = new URL(String(r.headers['location']));
    assert.equal(to.origin, idp.issuer);
    assert.equal(to.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(to.searchParams.get('response_type'), 'code');
    assert.equal(to.searchParams.get('redirect_uri'), `${base}/admin/oidc/callback`);
    assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
    assert.match(to.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok((to.searchParams.get('state') ?? '').length >= 32);
    assert.ok((to.searchParams.get('nonce') ?? '').length >= 32);
    assert.deepEqual(to.searchParams.get('scope')?.split(' '), ['openid', 'email', 'groups']);
    const set = String(r.headers['set-cookie']);
    assert.match(
      set,
      /^devutil-admin-login=[A-Za-z0-9_-]{43}; Max-Age=600; Path=\/admin\/oidc; HttpOnly; SameSite=Lax$/,
    );
    assert.equal(c.cookie('127.0.0.1', SESSION), undefined);
  });

  it('lets an allowed user (by verified e-mail) reach the dashboard, and read the stats with the session', async () => {
    const c = browser();
    const cb = await signInAtProvider(c, `${base}/admin`, 'alice', base);
    const back = await c.send('GET', cb.href);
    assert.equal(back.status, 303, back.body);
    assert.equal(back.headers['location'], '/admin');
    const cookies = ([] as string[]).concat(back.headers['set-cookie'] ?? []);
    assert.ok(
      cookies.some((l) =>
        /^devutil-admin=[A-Za-z0-9_-]{43}; Max-Age=28800; Path=\/; HttpOnly; SameSite=Lax$/.test(l),
      ),
      cookies.join('\n'),
    );
    const page = await c.send('GET', `${base}/admin`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<body data-page="admin" data-session="oidc">/);
    assert.match(page.body, /alice@example\.com/);
    assert.match(page.body, /<form method="post" action="\/admin\/logout"/);
    const stats = await c.send('GET', `${base}${STATS}`);
    assert.equal(stats.status, 200, stats.body);
    assert.equal((JSON.parse(stats.body) as { status: number }).status, 1);
  });

  it('lets a member of an allowed group in (groups from the userinfo answer)', async () => {
    const c = browser();
    const cb = await signInAtProvider(
      c,
      `${base}/admin/oidc/login?return_to=%2Fadmin%3Fwindow%3Dday`,
      'carol',
      base,
    );
    const back = await c.send('GET', cb.href);
    assert.equal(back.status, 303, back.body);
    assert.equal(back.headers['location'], '/admin?window=day');
    const page = await c.send('GET', `${base}/admin`);
    assert.equal(page.status, 200);
    assert.match(page.body, /carol@example\.com/);
  });

  for (const [who, why] of [
    ['bob', 'bob@example.com'],
    ['mallory', 'mallory'],
  ] as const) {
    it(`refuses ${who} (not on the allowed lists${who === 'mallory' ? ', unverified allowed e-mail' : ''}) with 403 in admin's envelope`, async () => {
      const c = browser();
      const cb = await signInAtProvider(c, `${base}/admin`, who, base);
      const back = await c.send('GET', cb.href);
      assert.equal(back.status, 403);
      assert.match(String(back.headers['content-type']), /^text\/plain/);
      assert.equal(back.body, `${why} may not use this dashboard\n`);
      assert.equal(c.cookie('127.0.0.1', SESSION), undefined, 'no session cookie');
      const page = await c.send('GET', `${base}/admin`);
      assert.equal(page.status, 302, 'still no session: back to the provider');
      const stats = await c.send('GET', `${base}${STATS}`);
      assert.equal(stats.status, 401);
    });
  }

  it('ends the session at logout, on the server side too (the old cookie no longer works)', async () => {
    const c = browser();
    await c.send('GET', (await signInAtProvider(c, `${base}/admin`, 'alice', base)).href);
    const sid = c.cookie('127.0.0.1', SESSION);
    assert.ok(sid);
    assert.equal((await c.send('GET', `${base}${STATS}`)).status, 200);
    const foreign = await c.send('POST', `${base}/admin/logout`, {
      body: '',
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403, 'a form on another site cannot sign the operator out');
    const hidden = await c.send('POST', `${base}/admin/logout`, {
      body: '',
      headers: { origin: 'null', 'sec-fetch-site': 'cross-site' },
    });
    assert.equal(hidden.status, 403, 'nor one that hides its origin');
    const out = await c.send('POST', `${base}/admin/logout`, { body: '', headers: { origin: base } });
    assert.equal(out.status, 303);
    assert.equal(out.headers['location'], '/');
    assert.equal(c.cookie('127.0.0.1', SESSION), undefined, 'the cookie is cleared');
    // The same id replayed by someone who kept it.
    const replay = new CookieClient();
    replay.setCookie('127.0.0.1', SESSION, sid);
    assert.equal((await replay.send('GET', `${base}${STATS}`)).status, 401);
    assert.equal((await replay.send('GET', `${base}/admin`)).status, 302);
  });

  it('keeps the bearer token working for scripts, and a wrong token is refused even with a session', async () => {
    const ok = await new CookieClient().send('GET', `${base}${STATS}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(ok.status, 200);
    assert.equal((await new CookieClient().send('GET', `${base}${STATS}`)).status, 401);
    const c = browser();
    await c.send('GET', (await signInAtProvider(c, `${base}/admin`, 'carol', base)).href);
    const wrong = await c.send('GET', `${base}${STATS}`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    assert.equal(wrong.status, 401);
  });

  it('signs in and out in real Chromium: the page draws the figures with the session cookie alone', {
    skip: toolSkip('chromium'),
  }, async () => {
    const browser = await launch({ args: [`--host-resolver-rules=MAP ${idp.host} 127.0.0.1`] });
    try {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(30_000);
      // Errors of devutil's pages only (the provider's development pages ask for web fonts).
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
      page.on('response', (r) => {
        if (r.url().startsWith(base) && r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
      });
      await page.goto(`${base}/admin`);
      // The provider's development sign-in form, then its consent form.
      await page.waitForURL((u) => u.host === `${idp.host}:${idp.port}`);
      await page.fill('input[name=login]', 'alice');
      await page.fill('input[name=password]', 'any');
      await page.click('button[type=submit]');
      await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached' });
      await page.click('button[type=submit]');
      await page.waitForURL(`${base}/admin`);
      await page.locator('svg.chart[data-chart="requests"] rect').first().waitFor();
      assert.equal(await page.locator('#admin-dash').isVisible(), true);
      assert.equal(await page.locator('#admin-login').isVisible(), false, 'no token form');
      assert.match((await page.textContent('header')) ?? '', /alice@example\.com/);
      assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'no token kept');
      const cookies = await browser.context.cookies(base);
      const session = cookies.find((c) => c.name === SESSION);
      assert.ok(session);
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Lax');
      assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read it');
      assert.deepEqual(errors, []);
      // Sign out: the page's own form (Origin: null under its no-referrer policy, Sec-Fetch-Site
      // same-origin), then the home page.
      await page.click('#admin-signout');
      await page.waitForURL(`${base}/`);
      assert.equal(
        (await browser.context.cookies(base)).some((c) => c.name === SESSION),
        false,
      );
      const old = new CookieClient();
      old.setCookie('127.0.0.1', SESSION, session.value);
      assert.equal((await old.send('GET', `${base}${STATS}`)).status, 401);
    } finally {
      await browser.close();
    }
  });

  it('marks its cookies Secure with the __Secure-/__Host- prefixes when the public URL is https', async () => {
    const app = await buildTestServer({
      overrides: {
        server: { publicUrl: HTTPS_BASE },
        egress: { resolve: [idp.resolve] },
        admin: {
          oidcIssuer: idp.issuer,
          oidcClientId: CLIENT_ID,
          oidcClientSecret: CLIENT_SECRET,
          oidcAllowedUsers: ['alice@example.com'],
        },
      },
    });
    try {
      const r = await app.inject({ url: '/admin' });
      assert.equal(r.statusCode, 302);
      const m =
        /^__Secure-devutil-admin-login=([A-Za-z0-9_-]{43}); Max-Age=600; Path=\/admin\/oidc; HttpOnly; Secure; SameSite=Lax$/.exec(
          String(r.headers['set-cookie']),
        );
      assert.ok(m, String(r.headers['set-cookie']));
      assert.equal(
        new URL(String(r.headers['location'])).searchParams.get('redirect_uri'),
        `${HTTPS_BASE}/admin/oidc/callback`,
      );
      const cb = await signInAtProvider(browser(), String(r.headers['location']), 'alice', HTTPS_BASE);
      const back = await app.inject({
        url: `${cb.pathname}${cb.search}`,
        headers: { cookie: `__Secure-devutil-admin-login=${m[1]}` },
      });
      assert.equal(back.statusCode, 303, back.body);
      const set = ([] as string[]).concat(back.headers['set-cookie'] ?? []);
      assert.ok(
        set.some((l) =>
          /^__Host-devutil-admin=[A-Za-z0-9_-]{43}; Max-Age=28800; Path=\/; HttpOnly; Secure; SameSite=Lax$/.test(
            l,
          ),
        ),
        set.join('\n'),
      );
    } finally {
      await app.close();
    }
  });

  describe('hostile callbacks', () => {
    /** A sign-in started here (login cookie set) whose callback the test then forges. */
    async function started(): Promise<{ c: CookieClient; state: string }> {
      const c = browser();
      const r = await c.send('GET', `${base}/admin/oidc/login`);
      assert.equal(r.status, 302);
      const state = new URL(String(r.headers['location'])).searchParams.get('state');
      assert.ok(state);
      return { c, state };
    }
    const noStack = (r: Answer) => {
      assert.match(String(r.headers['content-type']), /^text\/plain/);
      assert.doesNotMatch(r.body, /\n\s+at |Error:|node_modules|\/src\//);
      assert.equal(r.body.split('\n').length, 2, 'one line');
    };

    for (const [name, query, status] of [
      ['no parameters', '', 400],
      ['no code', 'state=STATE', 400],
      ['no state', 'code=abc', 400],
      ['a repeated state', 'code=abc&state=STATE&state=STATE', 400],
      ['a repeated code', 'code=abc&code=def&state=STATE', 400],
      ['a foreign state', 'code=abc&state=not-this-sign-in', 400],
      ['a forged code with the right state', 'code=forged-code&state=STATE', 401],
      ['the provider refusing (access_denied)', 'error=access_denied&state=STATE', 401],
      ['an error with markup', 'error=%3Cscript%3E&state=STATE', 401],
    ] as const) {
      it(`answers ${status} to ${name}`, async () => {
        const { c, state } = await started();
        const r = await c.send('GET', `${base}/admin/oidc/callback?${query.replaceAll('STATE', state)}`);
        assert.equal(r.status, status, r.body);
        noStack(r);
        assert.doesNotMatch(r.body, /<script>/);
        assert.equal(c.cookie('127.0.0.1', SESSION), undefined);
      });
    }

    it('answers 400 to a callback from a browser that started no sign-in (or a forged login cookie)', async () => {
      const { c, state } = await started();
      const url = `${base}/admin/oidc/callback?code=abc&state=${state}`;
      const other = new CookieClient();
      const r1 = await other.send('GET', url);
      assert.equal(r1.status, 400);
      noStack(r1);
      other.setCookie('127.0.0.1', LOGIN, 'A'.repeat(43), '/admin/oidc');
      assert.equal((await other.send('GET', url)).status, 400);
      other.setCookie('127.0.0.1', LOGIN, '../../etc/passwd', '/admin/oidc');
      assert.equal((await other.send('GET', url)).status, 400);
      assert.ok(c.cookie('127.0.0.1', LOGIN));
    });

    it('answers 400 to a replayed callback (the same code and state again), and the first one signed in', async () => {
      const c = browser();
      const cb = await signInAtProvider(c, `${base}/admin`, 'alice', base);
      const login = c.cookie('127.0.0.1', LOGIN);
      assert.ok(login);
      assert.equal((await c.send('GET', cb.href)).status, 303);
      // An attacker who saw the URL and the login cookie (or the same browser going back).
      const again = new CookieClient();
      again.setCookie('127.0.0.1', LOGIN, login, '/admin/oidc');
      const r = await again.send('GET', cb.href);
      assert.equal(r.status, 400);
      noStack(r);
      assert.equal(again.cookie('127.0.0.1', SESSION), undefined);
    });

    for (const target of [
      '//evil.example/admin',
      'https://evil.example/admin',
      '/\\evil.example',
      '/admin/../evil',
      '/admin//evil.example',
      '/adminx',
      'javascript:alert(1)',
      '/admin\r\nSet-Cookie: x=y',
      '',
    ]) {
      it(`refuses return_to=${JSON.stringify(target)} with 400 (no open redirect)`, async () => {
        const r = await browser().send(
          'GET',
          `${base}/admin/oidc/login?return_to=${encodeURIComponent(target)}`,
        );
        assert.equal(r.status, 400, r.body);
        assert.equal(r.headers['location'], undefined);
        assert.equal(r.body, 'return_to must be a path under /admin on this server\n');
      });
    }
  });

  it('never logs the client secret, codes, tokens, state or cookies', async () => {
    const text = logs.text();
    assert.match(text, /oidc sign-in refused/, 'the refusal is logged (without secrets)');
    assert.match(text, /"user":"alice@example.com".*oidc sign-in|oidc sign-in.*"user":"alice@example.com"/);
    assert.doesNotMatch(text, new RegExp(CLIENT_SECRET));
    assert.doesNotMatch(text, new RegExp(TOKEN));
    assert.doesNotMatch(text, /code=[A-Za-z0-9_-]{20,}/);
    assert.doesNotMatch(text, /state=[A-Za-z0-9_-]{20,}/);
    assert.doesNotMatch(text, /devutil-admin(-login)?=[A-Za-z0-9_-]{43}/);
    assert.doesNotMatch(text, /eyJ[A-Za-z0-9_-]{10,}\.eyJ/, 'no JWT');
  });
});

describe('admin single sign-on across two nodes on one Redis', {
  timeout: 180_000,
  skip: toolSkip('redis-server'),
}, () => {
  let redis: RedisHandle;
  let idp: TestProvider;
  const nodes: Running[] = [];
  const urls: string[] = [];

  before(async () => {
    const ports = [await freePort(), await freePort()];
    for (const p of ports) urls.push(`http://127.0.0.1:${p}`);
    redis = await startRedis();
    try {
      // Like a balancer sending the provider's redirect to another node: both nodes name node B's
      // callback, so every sign-in begun on A is finished on B.
      const callback = `${urls[1]}/admin/oidc/callback`;
      idp = await startProvider({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        redirectUris: [callback],
        accounts: ACCOUNTS,
      });
      for (const port of ports)
        nodes.push(
          await startTestServer({
            overrides: {
              server: { port },
              redis: { url: redis.url },
              egress: { resolve: [idp.resolve] },
              admin: {
                rateLimit: '1000/min',
                oidcIssuer: idp.issuer,
                oidcClientId: CLIENT_ID,
                oidcClientSecret: CLIENT_SECRET,
                oidcRedirectUrl: callback,
                oidcAllowedUsers: ['alice@example.com'],
              },
            },
          }),
        );
    } catch (err) {
      for (const n of nodes) await n.close();
      await idp?.close();
      await redis.stop();
      throw err;
    }
  });
  after(async () => {
    for (const n of nodes) await n.close();
    await idp?.close();
    await redis?.stop();
  });

  it('finishes on node B a sign-in begun on node A, and both know the session until logout on either', async () => {
    const [a, b] = urls as [string, string];
    const c = new CookieClient({ [idp.host]: `127.0.0.1:${idp.port}` });
    const cb = await signInAtProvider(c, `${a}/admin`, 'alice', b);
    const login = c.cookie('127.0.0.1', LOGIN);
    assert.ok(login);
    assert.equal(cb.origin, b);
    const back = await c.send('GET', cb.href);
    assert.equal(back.status, 303, back.body);
    // Browsers keep cookies per host name, not per port: both nodes get the session cookie.
    assert.equal((await c.send('GET', `${a}/admin`)).status, 200);
    assert.equal((await c.send('GET', `${a}${STATS}`)).status, 200);
    assert.equal((await c.send('GET', `${b}${STATS}`)).status, 200);
    // The same callback replayed on node A: the sign-in was used on B.
    const again = new CookieClient();
    again.setCookie('127.0.0.1', LOGIN, login, '/admin/oidc');
    assert.equal((await again.send('GET', `${a}/admin/oidc/callback${cb.search}`)).status, 400);
    const sid = c.cookie('127.0.0.1', SESSION);
    assert.ok(sid);
    assert.equal((await c.send('POST', `${b}/admin/logout`, { body: '' })).status, 303);
    const old = new CookieClient();
    old.setCookie('127.0.0.1', SESSION, sid);
    assert.equal((await old.send('GET', `${a}${STATS}`)).status, 401, 'ended on node A too');
  });

  it('ends a session on a node whose settings no longer list its user, at its next request', async () => {
    const [a, b] = urls as [string, string];
    const c = new CookieClient({ [idp.host]: `127.0.0.1:${idp.port}` });
    assert.equal(
      (await c.send('GET', (await signInAtProvider(c, `${a}/admin`, 'alice', b)).href)).status,
      303,
    );
    const sid = c.cookie('127.0.0.1', SESSION);
    assert.ok(sid);
    // The operator takes alice off the list: a node started with the new settings, same Redis.
    const node = await startTestServer({
      overrides: {
        redis: { url: redis.url },
        egress: { resolve: [idp.resolve] },
        admin: {
          oidcIssuer: idp.issuer,
          oidcClientId: CLIENT_ID,
          oidcClientSecret: CLIENT_SECRET,
          oidcRedirectUrl: `${b}/admin/oidc/callback`,
          oidcAllowedUsers: ['carol@example.com'],
        },
      },
    });
    try {
      const kept = new CookieClient();
      kept.setCookie('127.0.0.1', SESSION, sid);
      assert.equal((await kept.send('GET', `${node.url}${STATS}`)).status, 401);
      assert.equal((await kept.send('GET', `${node.url}/admin`)).status, 302, 'back to the provider');
      assert.equal((await kept.send('GET', `${a}${STATS}`)).status, 200, 'the old settings still list her');
    } finally {
      await node.close();
    }
  });
});

// The admin routes through the real composition: off without a token (404 like any unknown path),
// refused without the right one (401 in the v1 envelope; the page shows only the sign-in form), the
// counts of real requests, and two instances on one Redis seeing each other's traffic.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { freePort } from '../../../test/helpers/ports.ts';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { ConfigError, loadConfig } from '../../config.ts';
import { redact } from '../../infra/observe/redact.ts';
import { relayBackground } from '../relay/background.ts';
import { clientIdentity, joinRelay, joinSession, requestSession } from '../relay/client.ts';
import { RELAY } from '../relay/handle.ts';
import type { Message } from '../relay/protocol/messages.ts';

const TOKEN = testSecret('admin-token-');
const STATS = '/rest/api/v1/admin/stats';
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

interface Stats {
  instances: number;
  shared: boolean;
  totals: { requests: number; errors: number };
  utilities: { name: string; requests: number; errors: number }[];
  topClients: { byRequests: { key: string; requests: number }[] };
  caches: { name: string }[];
  queues: { name: string; queued: number; limit: number }[];
  relay: { running: boolean; activeSessions: number; sessions: number; bytes: number };
  budgets: unknown[];
  quotas: unknown[];
}

async function stats(app: FastifyInstance, window = 'hour'): Promise<Stats> {
  const r = await app.inject({ url: `${STATS}?window=${window}`, headers: bearer(TOKEN) });
  assert.equal(r.statusCode, 200, r.body);
  const body = r.json() as { status: number; message: string; data: Stats };
  assert.equal(body.status, 1);
  return body.data;
}

describe('admin dashboard routes', () => {
  it('does not exist without DEVUTIL_ADMIN_TOKEN: the page and the JSON answer 404', async () => {
    const app = await buildTestServer();
    try {
      assert.equal(app.ctx.usage, null, 'nothing is counted while the dashboard is off');
      const page = await app.inject({ url: '/admin' });
      assert.equal(page.statusCode, 404);
      const json = await app.inject({ url: STATS, headers: bearer(TOKEN) });
      assert.equal(json.statusCode, 404);
      assert.deepEqual(json.json(), { status: 0, message: `no such route: GET ${STATS}`, data: null });
    } finally {
      await app.close();
    }
  });

  it('refuses a token shorter than 16 characters at start-up, naming the variable', () => {
    assert.throws(
      () => loadConfig({ env: { DEVUTIL_ADMIN_TOKEN: 'short' } }),
      (e: unknown) => e instanceof ConfigError && /DEVUTIL_ADMIN_TOKEN/.test(e.message),
    );
  });

  describe('with a token', () => {
    let app: FastifyInstance;
    const logs = new LogCapture();
    before(async () => {
      app = await buildTestServer({ env: { DEVUTIL_ADMIN_TOKEN: TOKEN }, logs });
    });
    after(() => app.close());

    for (const [name, headers] of [
      ['no Authorization header', {}],
      ['a wrong token', bearer(`${TOKEN}x`)],
      ['the token without Bearer', { authorization: TOKEN }],
      ['the token in the query string (never read from a URL)', {}],
    ] as const) {
      it(`answers 401 in the v1 envelope to ${name}`, async () => {
        const q = name.includes('query') ? `?token=${TOKEN}&access_token=${TOKEN}` : '';
        const r = await app.inject({ url: `${STATS}${q}`, headers });
        assert.equal(r.statusCode, 401);
        assert.deepEqual(r.json(), { status: 0, message: 'a valid admin token is required', data: null });
        assert.equal(r.headers['www-authenticate'], 'Bearer realm="admin"');
      });
    }

    it('serves the page with the sign-in form and no figures, under the page CSP', async () => {
      const r = await app.inject({ url: '/admin' });
      assert.equal(r.statusCode, 200);
      assert.match(r.headers['content-type'] as string, /^text\/html/);
      assert.match(r.headers['content-security-policy'] as string, /script-src 'self'/);
      assert.equal(r.headers['cache-control'], 'no-store');
      assert.match(r.body, /<form id="admin-login-form" method="post" action="\/admin"/);
      assert.match(r.body, /<input id="admin-token" name="token" type="password"/);
      assert.match(r.body, /<div id="admin-dash" hidden>/);
      assert.doesNotMatch(r.body, /<table|<svg|<script>/);
    });

    it('counts requests, errors and clients per utility', async () => {
      const before = await stats(app);
      for (let i = 0; i < 3; i++)
        await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.23' });
      await app.inject({ url: '/api/file/no-such-file', remoteAddress: '198.51.100.23' });
      const s = await stats(app);
      const ip = s.utilities.find((u) => u.name === 'ip');
      const files = s.utilities.find((u) => u.name === 'files');
      assert.equal(ip?.requests, 3);
      assert.equal(ip?.errors, 0);
      assert.equal(files?.requests, 1);
      assert.equal(files?.errors, 1);
      // The earlier stats request counts too (admin), as does this instance alone.
      assert.equal(s.totals.requests - before.totals.requests, 5);
      assert.deepEqual(
        s.topClients.byRequests.find((c) => c.key === '198.51.100.23'),
        { key: '198.51.100.23', requests: 4 },
      );
      assert.equal(s.instances, 1);
      assert.equal(s.shared, false);
    });

    it('lists the caches and render queues of the enabled utilities, and the byte budgets', async () => {
      const s = await stats(app, 'day');
      assert.deepEqual(
        s.caches.map((c) => c.name),
        ['image', 'proxy', 'diagrams', 'avatar'],
      );
      assert.deepEqual(
        s.queues.map((q) => [q.name, q.limit]),
        [
          ['image', 32],
          ['diagrams', 64],
          ['avatar', 256],
        ],
      );
      assert.equal(s.relay.running, false);
      // The proxy's default per-client byte budget (100GiB/day), no total; no files quota by default.
      assert.deepEqual(s.budgets, [{ name: 'proxy', used: 0, limit: 0, clientLimit: 100 * 1024 ** 3 }]);
      assert.deepEqual(s.quotas, []);
    });

    it('documents both routes under the admin tag in /openapi.json', async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json() as {
        paths: Record<string, Record<string, { summary?: string; tags?: string[] }>>;
      };
      for (const path of ['/admin', STATS]) {
        assert.deepEqual(doc.paths[path]?.['get']?.tags, ['admin'], path);
        assert.ok((doc.paths[path]?.['get']?.summary ?? '').length > 10, path);
      }
    });

    it('refuses an unknown window with 400', async () => {
      const r = await app.inject({ url: `${STATS}?window=week`, headers: bearer(TOKEN) });
      assert.equal(r.statusCode, 400);
      assert.equal(r.json().status, 0);
    });

    it('never logs the token', () => {
      assert.ok(logs.lines.length > 0);
      assert.ok(!logs.text().includes(TOKEN));
    });
  });
});

describe('the admin token in logs', () => {
  it('is masked while a server holding it runs, and no longer once the last one closed', async () => {
    // A process may build several servers (tests, batches of test files): a closed server's
    // secrets must not go on masking the text of the servers that come after it.
    const token = testSecret('admin-token-');
    const line = `token ${token} in a message`;
    const a = await buildTestServer({ env: { DEVUTIL_ADMIN_TOKEN: token } });
    let b: FastifyInstance | undefined;
    try {
      b = await buildTestServer({ env: { DEVUTIL_ADMIN_TOKEN: token } });
      assert.equal(redact(line), 'token [redacted] in a message');
      await a.close();
      assert.equal(redact(line), 'token [redacted] in a message', 'the second server still runs');
      await b.close();
      b = undefined;
      assert.equal(redact(line), line);
    } finally {
      await a.close();
      await b?.close();
    }
  });
});

describe('admin stats of the Syncthing relay', () => {
  let app: FastifyInstance;
  let relay: { close(): Promise<void> };
  before(async () => {
    app = await buildTestServer({
      env: { DEVUTIL_ADMIN_TOKEN: TOKEN },
      overrides: { relay: { port: await freePort(), statusPort: 0, host: '127.0.0.1' } },
    });
    relay = await relayBackground.start(app.ctx);
  });
  after(async () => {
    await relay?.close();
    await app?.close();
  });

  it('shows open sessions, sessions started and bytes relayed by a real relay session', async () => {
    const port = app.ctx.local(RELAY).running?.port ?? 0;
    const [a, b] = [clientIdentity(), clientIdentity()];
    const joined = await joinRelay('127.0.0.1', port, a);
    const invite = (m: Message) => m as Extract<Message, { type: 'sessionInvitation' }>;
    const toB = invite(await requestSession('127.0.0.1', port, b, a.raw));
    const toA = invite(await joined.stream.next());
    const sa = await joinSession('127.0.0.1', port, toA.key);
    const sb = await joinSession('127.0.0.1', port, toB.key);
    const payload = Buffer.alloc(50_000, 1);
    const got = new Promise<void>((resolve) => {
      let n = 0;
      sa.on('data', (c: Buffer) => {
        n += c.length;
        if (n >= payload.length) resolve();
      });
      sa.resume();
    });
    sb.write(payload);
    await got;
    const s = (await stats(app)).relay;
    assert.deepEqual(s, { running: true, activeSessions: 1, sessions: 1, bytes: payload.length });
    for (const sock of [sa, sb] as Socket[]) sock.destroy();
    joined.stream.close();
  });
});

describe('admin stats over Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  let a: FastifyInstance;
  let b: FastifyInstance;
  before(async () => {
    redis = await startRedis();
    const opts = {
      env: { DEVUTIL_ADMIN_TOKEN: TOKEN, DEVUTIL_ADMIN_FLUSH_INTERVAL_MS: '500' },
      overrides: { redis: { url: redis.url } },
    };
    a = await buildTestServer(opts);
    b = await buildTestServer(opts);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  it("shows traffic on instance A in instance B's stats, with both instances counted", async () => {
    for (let i = 0; i < 4; i++) await a.inject({ url: '/api/ip', remoteAddress: '203.0.113.77' });
    // A adds its counts to Redis on its own timer; B reads whatever the fleet has added.
    let s: Stats | undefined;
    for (const until = Date.now() + 15_000; Date.now() < until; ) {
      s = await stats(b);
      if (s.utilities.some((u) => u.name === 'ip') && s.instances === 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(s);
    assert.equal(s.shared, true);
    assert.equal(s.instances, 2);
    assert.equal(s.utilities.find((u) => u.name === 'ip')?.requests, 4);
    assert.deepEqual(
      s.topClients.byRequests.find((c) => c.key === '203.0.113.77'),
      { key: '203.0.113.77', requests: 4 },
    );
    const day = await stats(b, 'day');
    assert.equal(day.utilities.find((u) => u.name === 'ip')?.requests, 4);
  });

  it('answers 503 in the v1 envelope while Redis is down, and recovers when it is back', async () => {
    await redis.stop();
    const r = await b.inject({ url: STATS, headers: bearer(TOKEN) });
    assert.equal(r.statusCode, 503);
    assert.deepEqual(r.json(), {
      status: 0,
      message: 'the shared usage counters are unreachable; try again shortly',
      data: null,
    });
    assert.equal(r.headers['retry-after'], '5');
    await redis.restart();
    let status = 0;
    for (const until = Date.now() + 15_000; Date.now() < until && status !== 200; ) {
      status = (await b.inject({ url: STATS, headers: bearer(TOKEN) })).statusCode;
      if (status !== 200) await new Promise((res) => setTimeout(res, 200));
    }
    assert.equal(status, 200);
  });
});

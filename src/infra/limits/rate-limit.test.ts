import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { jsonInString } from '../../../test/helpers/log-lines.ts';
import { startAll } from '../../../test/helpers/process.ts';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const limited = { ip: { rateLimit: '3/min' } };

async function hammer(apps: FastifyInstance[], n: number, url: string, ip = '198.51.100.1') {
  const out = [];
  for (let i = 0; i < n; i++) {
    const app = apps[i % apps.length]!;
    out.push(await app.inject({ url, remoteAddress: ip }));
  }
  return out;
}

describe('rate limits in memory', () => {
  it('answers the N+1st request with 429 in the route family envelope', async () => {
    const app = await buildTestServer({ overrides: limited });
    try {
      const rs = await hammer([app], 4, '/rest/api/v1/ip');
      assert.deepEqual(
        rs.map((r) => r.statusCode),
        [200, 200, 200, 429],
      );
      const last = rs[3]!;
      assert.deepEqual(Object.keys(last.json()).sort(), ['data', 'message', 'status']);
      assert.equal(last.json().status, 0);
      assert.ok(Number(last.headers['retry-after']) >= 1);
      assert.equal(last.headers['ratelimit-limit'], '3');
      assert.equal(last.headers['ratelimit-remaining'], '0');
      assert.equal(rs[0]!.headers['ratelimit-remaining'], '2');
      // The legacy route shares the bucket and answers in its own envelope.
      const legacy = await app.inject({ url: '/api/ip', remoteAddress: '198.51.100.1' });
      assert.equal(legacy.statusCode, 429);
      assert.deepEqual(Object.keys(legacy.json()).sort(), ['data', 'msg', 'status']);
      // Another client has its own budget.
      const other = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.2' });
      assert.equal(other.statusCode, 200);
    } finally {
      await app.close();
    }
  });

  it('does not limit the IP endpoints by default', async () => {
    const app = await buildTestServer();
    try {
      const rs = await hammer([app], 50, '/rest/api/v1/ip');
      assert.ok(rs.every((r) => r.statusCode === 200 && r.headers['ratelimit-limit'] === undefined));
    } finally {
      await app.close();
    }
  });
});

// Acceptance (issue 23, item 4): every rate limit counts one IPv6 /64 as one client. Each row is a
// route behind a limit; N+1 requests from N+1 different addresses of one /64 get a 429.
const V6 = (n: number) => `2001:db8:aa:bb:${n.toString(16)}::${(n * 7).toString(16)}`;
const everyLimit = {
  ip: { rateLimit: '2/min' },
  image: { rateLimit: '2/min' },
  diagrams: { rateLimit: '2/min', prestart: false },
  avatar: { rateLimit: '2/min', adminRateLimit: '2/min', adminToken: 'a'.repeat(32) },
  files: { rateLimit: '2/min', uploadRateLimit: '2/min' },
  telegram: { rateLimit: '2/min' },
  proxy: { rateLimit: '2/min' },
  admin: { token: 'b'.repeat(32), rateLimit: '2/min' },
};
const routes: [string, string, string][] = [
  ['ip', 'GET', '/rest/api/v1/ip'],
  ['image', 'GET', '/rest/api/v1/image/list'],
  // The limit is an onRequest hook: a source that does not decode (400) counts as a render would,
  // and no JVM starts (a JVM start was most of this file's CPU).
  ['plantuml', 'GET', '/plantuml/txt/~~~~'],
  ['avatar', 'GET', `/avatar/${'0'.repeat(32)}`],
  ['avatar-admin', 'DELETE', `/avatar/${'0'.repeat(32)}`],
  ['files', 'POST', '/api/file/k'],
  ['files-upload', 'HEAD', `/api/upload/${'0'.repeat(32)}`],
  ['telegram-ip', 'POST', '/rest/api/v1/telegram'],
  ['proxy', 'GET', '/proxy/github.com/o/r/info/refs'],
  ['admin', 'GET', '/rest/api/v1/admin/stats'],
];

describe('every rate limit counts an IPv6 /64 as one client', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: everyLimit });
  });
  after(() => app?.close());

  for (const [bucket, method, url] of routes) {
    it(`${bucket}: ${method} ${url.slice(0, 40)} from 3 addresses of one /64 gets 429 the third time`, async () => {
      const rs = [];
      for (let i = 1; i <= 3; i++)
        rs.push(
          await app.inject({ method: method as 'GET', url, remoteAddress: V6(i + bucket.length * 10) }),
        );
      assert.notEqual(rs[0]?.statusCode, 429);
      assert.equal(rs[2]?.statusCode, 429, `${rs[2]?.statusCode} ${rs[2]?.body.slice(0, 200)}`);
      assert.ok(Number(rs[2]?.headers['retry-after']) >= 1);
      // The next /64 is another client.
      const other = await app.inject({ method: method as 'GET', url, remoteAddress: '2001:db8:aa:bc::1' });
      assert.notEqual(other.statusCode, 429);
    });
  }
});

// The key is the client after the trusted-proxy walk, never the socket peer: behind one trusted
// reverse proxy, two clients have two budgets, and one client's IPv6 /64 is one budget.
describe('rate limits behind a trusted proxy', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { ...limited, server: { trustProxy: ['loopback'] } } });
  });
  after(() => app?.close());
  const via = (xff: string) =>
    app.inject({ url: '/rest/api/v1/ip', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': xff } });

  it('counts the forwarded client, not the proxy that carries it', async () => {
    const a = [];
    for (let i = 0; i < 4; i++) a.push((await via('198.51.100.30')).statusCode);
    assert.deepEqual(a, [200, 200, 200, 429]);
    // Same socket peer (the proxy), another client: its own budget.
    assert.equal((await via('198.51.100.31')).statusCode, 200);
    assert.equal((await via('198.51.100.31')).json().data.ip, '198.51.100.31');
  });

  it('groups the forwarded IPv6 clients of one /64', async () => {
    const s = [];
    for (let i = 1; i <= 4; i++) s.push((await via(`2001:db8:1:2::${i}`)).statusCode);
    assert.deepEqual(s, [200, 200, 200, 429]);
    assert.equal((await via('2001:db8:1:3::1')).statusCode, 200);
  });

  it('counts a spoofed X-Forwarded-For from an untrusted peer against that peer', async () => {
    const direct = (xff: string) =>
      app.inject({
        url: '/rest/api/v1/ip',
        remoteAddress: '203.0.113.60',
        headers: { 'x-forwarded-for': xff },
      });
    const s = [];
    for (let i = 0; i < 4; i++) s.push((await direct(`192.0.2.${i + 1}`)).statusCode);
    assert.deepEqual(s, [200, 200, 200, 429]);
  });
});

describe('rate limits shared through Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  it('shares one budget between two server instances', async () => {
    const env = { DEVUTIL_REDIS_URL: redis.url, DEVUTIL_REDIS_KEY_PREFIX: `t${Date.now()}:` };
    const [a, b] = await startAll([
      buildTestServer({ overrides: limited, env }),
      buildTestServer({ overrides: limited, env }),
    ]);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const rs = await hammer([a, b], 4, '/rest/api/v1/ip', '203.0.113.50');
      assert.deepEqual(
        rs.map((r) => r.statusCode),
        [200, 200, 200, 429],
      );
      assert.equal(rs[3]!.json().status, 0);
      assert.ok(Number(rs[3]!.headers['retry-after']) >= 1);
      // The counter really lives in Redis.
      const client = new Redis(redis.url);
      const keys = await client.keys(`${env.DEVUTIL_REDIS_KEY_PREFIX}c:rl:*`);
      client.disconnect();
      assert.equal(keys.length, 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('fails open or closed when Redis goes away, and recovers when it returns', async () => {
    const prefix = `f${Date.now()}:`;
    const logs = new LogCapture();
    const open = await buildTestServer({
      logs,
      overrides: limited,
      env: { DEVUTIL_REDIS_URL: redis.url, DEVUTIL_REDIS_KEY_PREFIX: prefix },
    });
    const closed = await buildTestServer({
      overrides: limited,
      env: {
        DEVUTIL_REDIS_URL: redis.url,
        DEVUTIL_REDIS_FAIL_MODE: 'closed',
        DEVUTIL_REDIS_KEY_PREFIX: prefix,
      },
    });
    try {
      await new Promise((r) => setTimeout(r, 200));
      await redis.stop();
      await new Promise((r) => setTimeout(r, 200));
      const o = await open.inject({ url: '/rest/api/v1/ip', remoteAddress: '192.0.2.77' });
      assert.equal(o.statusCode, 200);
      // The store's failure is logged as an error object, not as JSON text inside the line.
      const lines = logs.lines.map((l) => JSON.parse(l) as { msg?: string; err?: Record<string, unknown> });
      const failed = lines.find((l) => l.msg === 'rate limit store failed; letting request through');
      assert.equal(typeof failed?.err?.['type'], 'string', logs.text());
      assert.equal(typeof failed?.err?.['message'], 'string', logs.text());
      for (const l of lines) assert.equal(jsonInString(l), undefined, JSON.stringify(l));
      const c = await closed.inject({ url: '/rest/api/v1/ip', remoteAddress: '192.0.2.77' });
      assert.equal(c.statusCode, 503);
      assert.equal(c.json().status, 0);
      // Redis is shared by every node: it degrades the utilities that need it (files: the quota
      // refuses), and with limits failing closed every utility, which is "not ready".
      const ready = await open.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().status, 'degraded');
      assert.deepEqual(ready.json().degraded, ['files']);
      assert.equal(ready.json().checks.redis.ok, false);
      const closedReady = await closed.inject({ url: '/readyz' });
      assert.equal(closedReady.statusCode, 503);
      assert.equal(closedReady.json().status, 'not ready');
      await redis.restart();
      // ioredis reconnects on its own; wait for the limiter to count again.
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await closed.inject({ url: '/rest/api/v1/ip', remoteAddress: '192.0.2.78' })).statusCode;
      }
      assert.equal(status, 200);
      const headers = (await closed.inject({ url: '/rest/api/v1/ip', remoteAddress: '192.0.2.78' })).headers;
      assert.equal(headers['ratelimit-remaining'], '1');
    } finally {
      await open.close();
      await closed.close();
    }
  });

  // Issue 36: failing open wrote a warn line for every request while Redis was down.
  it('warns once per Redis outage, not once per request, and says once when it is over', async () => {
    const logs = new LogCapture();
    const app = await buildTestServer({
      logs,
      overrides: limited,
      env: { DEVUTIL_REDIS_URL: redis.url, DEVUTIL_REDIS_KEY_PREFIX: `w${Date.now()}:` },
    });
    const FAILED = 'rate limit store failed; letting request through';
    const OVER = 'rate limit store answers again';
    const count = (msg: string) =>
      logs.lines.filter((l) => (JSON.parse(l) as { msg?: string }).msg === msg).length;
    let n = 0;
    const ask = () => app.inject({ url: '/rest/api/v1/ip', remoteAddress: `192.0.2.${100 + (n++ % 100)}` });
    const outage = async (round: number) => {
      await redis.stop();
      for (let i = 0; i < 6; i++) assert.equal((await ask()).statusCode, 200, 'let through while down');
      assert.equal(count(FAILED), round, logs.text());
      await redis.restart();
      // ioredis reconnects on its own; the first request the store counts again ends the outage.
      await waitFor(
        async () => {
          await ask();
          return count(OVER) === round;
        },
        'the end of the outage',
        20_000,
      );
    };
    try {
      assert.equal((await ask()).statusCode, 200);
      assert.equal(count(FAILED), 0);
      await outage(1);
      await outage(2);
      assert.equal(count(FAILED), 2, 'one warning per outage');
      assert.equal(count(OVER), 2, 'one line per end of an outage');
      const over = logs.lines.map((l) => JSON.parse(l)).find((l) => l.msg === OVER);
      assert.ok(over.failures >= 6, JSON.stringify(over));
    } finally {
      await app.close();
    }
  });
});

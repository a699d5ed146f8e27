import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { MemoryStore } from './rate-limit.ts';

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

  it('opens a new window after the old one ends and sweeps expired keys', async () => {
    const store = new MemoryStore(60_000);
    assert.equal((await store.hit('k', 20)).count, 1);
    assert.equal((await store.hit('k', 20)).count, 2);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal((await store.hit('k', 20)).count, 1);
    await new Promise((r) => setTimeout(r, 30));
    store.sweep();
    assert.equal((store as unknown as { windows: Map<string, unknown> }).windows.size, 0);
    await store.close();
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
    const a = await buildTestServer({ overrides: limited, env });
    const b = await buildTestServer({ overrides: limited, env });
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
      const keys = await client.keys(`${env.DEVUTIL_REDIS_KEY_PREFIX}rl:*`);
      client.disconnect();
      assert.equal(keys.length, 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('fails open or closed when Redis goes away, and recovers when it returns', async () => {
    const prefix = `f${Date.now()}:`;
    const open = await buildTestServer({
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
      const c = await closed.inject({ url: '/rest/api/v1/ip', remoteAddress: '192.0.2.77' });
      assert.equal(c.statusCode, 503);
      assert.equal(c.json().status, 0);
      const ready = await open.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
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
});

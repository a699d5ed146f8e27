// The shared Redis client: its options for a URL and for Sentinel, the config keys that choose them,
// and a real Sentinel group (redis-server + redis-sentinel) whose primary is failed over under the
// client: the state and the pub/sub bus follow it, no reservation it acknowledged is lost (they are
// held while the sentinels fail over), and no password reaches a log line.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { type SentinelGroup, startSentinels } from '../../../test/helpers/redis.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { ConfigError, configSecrets, loadConfig } from '../../config.ts';
import { createBroadcast } from './broadcast.ts';
import {
  clientOptions,
  connectRedis,
  describeRedis,
  parseSentinel,
  redisConfigured,
  redisReady,
} from './redis.ts';
import { RedisState } from './redis-state.ts';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('redis config', { timeout: 10_000 }, () => {
  it('reads sentinels, the master name and the passwords', () => {
    const { config } = loadConfig({
      env: {
        DEVUTIL_REDIS_SENTINELS: 'a.example:26380, 10.0.0.2,[::1]:26381',
        DEVUTIL_REDIS_SENTINEL_NAME: 'cache-1',
        DEVUTIL_REDIS_PASSWORD: 'pw-data',
        DEVUTIL_REDIS_SENTINEL_PASSWORD: 'pw-sentinel',
      },
    });
    assert.equal(redisConfigured(config.redis), true);
    const o = clientOptions(config.redis);
    assert.deepEqual(o.sentinels, [
      { host: 'a.example', port: 26380 },
      { host: '10.0.0.2', port: 26379 },
      { host: '::1', port: 26381 },
    ]);
    assert.equal(o.name, 'cache-1');
    assert.equal(o.password, 'pw-data');
    assert.equal(o.sentinelPassword, 'pw-sentinel');
    assert.equal(o.failoverDetector, true);
    assert.equal(o.enableOfflineQueue, false);
    assert.equal(describeRedis(config.redis), 'sentinel cache-1 via a.example:26380,10.0.0.2,[::1]:26381');
    assert.deepEqual(configSecrets(config).sort(), ['pw-data', 'pw-sentinel']);
  });

  it('keeps the URL form as it was, without sentinel options', () => {
    const { config } = loadConfig({ env: { DEVUTIL_REDIS_URL: 'redis://:s3cret@db.internal:6380/2' } });
    assert.equal(redisConfigured(config.redis), true);
    const o = clientOptions(config.redis);
    assert.equal(o.sentinels, undefined);
    assert.equal(o.failoverDetector, undefined);
    assert.equal(describeRedis(config.redis).includes('s3cret'), false);
    assert.equal(redisConfigured(loadConfig({}).config.redis), false);
  });

  it('parses host:port, [v6]:port and a bare host', () => {
    assert.deepEqual(parseSentinel('h:1'), { host: 'h', port: 1 });
    assert.deepEqual(parseSentinel('[fe80::1]:2'), { host: 'fe80::1', port: 2 });
    assert.deepEqual(parseSentinel('h'), { host: 'h', port: 26379 });
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    [
      'a URL and sentinels',
      { DEVUTIL_REDIS_URL: 'redis://h', DEVUTIL_REDIS_SENTINELS: 'h:1' },
      /give one of them/,
    ],
    [
      'a password without sentinels',
      { DEVUTIL_REDIS_PASSWORD: 'x' },
      /DEVUTIL_REDIS_PASSWORD: only used with/,
    ],
    ['a sentinel password without sentinels', { DEVUTIL_REDIS_SENTINEL_PASSWORD: 'x' }, /SENTINEL_PASSWORD/],
    [
      'a port out of range',
      { DEVUTIL_REDIS_SENTINELS: 'h:70000' },
      /DEVUTIL_REDIS_SENTINELS.*port out of range/,
    ],
    ['a URL as a sentinel', { DEVUTIL_REDIS_SENTINELS: 'redis://h:1' }, /DEVUTIL_REDIS_SENTINELS.*host:port/],
    ['a v6 address without brackets', { DEVUTIL_REDIS_SENTINELS: '::1:26379' }, /host:port/],
    [
      'a master name with a space',
      { DEVUTIL_REDIS_SENTINELS: 'h', DEVUTIL_REDIS_SENTINEL_NAME: 'a b' },
      /NAME/,
    ],
  ];
  for (const [what, env, re] of bad)
    it(`refuses ${what} at start-up`, () => {
      const p = problems(env);
      assert.ok(
        p.some((l) => re.test(l)),
        p.join('\n'),
      );
    });
});

// The cases mostly wait for sentinels to agree on a failover, each on a group of its own (the first on
// the one before() starts): they run at once, so the file takes its longest case.
describe('redis through Sentinel', {
  skip: toolSkip('redis-sentinel'),
  timeout: 120_000,
  concurrency: true,
}, () => {
  const password = testSecret('redis-pw-');
  const sentinelPassword = testSecret('sentinel-pw-');
  const lines: string[] = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  let group: SentinelGroup | undefined;
  const conns: Redis[] = [];
  before(async () => {
    group = await startSentinels({ password, sentinelPassword });
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await group?.stop();
  });

  /** The config for group `g` and a ready client of the shared factory on it (after() closes it). */
  async function clientOf(g: SentinelGroup) {
    const { config } = loadConfig({
      env: {
        DEVUTIL_REDIS_SENTINELS: g.sentinels.join(','),
        DEVUTIL_REDIS_SENTINEL_NAME: g.name,
        DEVUTIL_REDIS_PASSWORD: password,
        DEVUTIL_REDIS_SENTINEL_PASSWORD: sentinelPassword,
      },
    });
    const redis = await connectRedis(config.redis, log);
    conns.push(redis);
    await redisReady(redis, 10_000);
    return { config, redis };
  }

  it('follows a failover: counters kept, writes reach the new primary, pub/sub resubscribed', async () => {
    const g = group as SentinelGroup;
    const { config, redis } = await clientOf(g);
    const state = new RedisState(redis, 'st:');
    let reconnects = 0;
    state.onReconnect(() => reconnects++);
    for (let i = 0; i < 5; i++) await state.count('hits', 1, { ttlMs: 60_000 });
    const bus = createBroadcast(redis, 'st:', log);
    const got: string[] = [];
    bus.subscribe('news', { message: async (t) => void got.push(t) });
    assert.equal(await bus.ready(5000), true);
    await g.synced();

    const { from, to } = await g.failover();
    assert.notEqual(from, to);
    // Commands fail (fast) until the client has moved; then the counter is where it was.
    const end = Date.now() + 30_000;
    let seen: number | null = null;
    while (seen === null && Date.now() < end) {
      seen = await state.counters(['hits']).then(
        (v) => v[0] ?? 0,
        () => null,
      );
      if (seen === null) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(seen, 5);
    // The write goes to the new primary (a demoted one would answer READONLY, and it is not `to`).
    let wrote: number | null = null;
    while (wrote === null && Date.now() < end) {
      wrote = await state.count('hits', 1, { ttlMs: 60_000 }).then(
        (r) => r.value,
        () => null,
      );
      if (wrote === null) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(wrote, 6);
    assert.ok(reconnects >= 1, 'the state layer told its users that it reconnected');
    assert.equal(Number(((await redis.config('GET', 'port')) as string[])[1]), to);

    // The subscriber connection (a duplicate of the client) followed too.
    const other = await connectRedis(config.redis, log);
    conns.push(other);
    await redisReady(other, 10_000);
    const bus2 = createBroadcast(other, 'st:', log);
    while (!got.includes('after') && Date.now() < end) {
      await bus2.publish('news', 'after');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(got.includes('after'), 'a message published after the failover arrives');
    await bus.close();
    await bus2.close();

    const all = lines.join('');
    assert.match(all, /redis reconnected/);
    assert.equal(all.includes(password), false, 'the data password is never logged');
    assert.equal(all.includes(sentinelPassword), false, 'the sentinel password is never logged');
  });

  it('follows a primary that was killed: writes fail fast meanwhile, then land on the promoted replica', async () => {
    // A group of its own: the first test's old primary is reconfigured as a replica only seconds later.
    const g = await startSentinels({ password, sentinelPassword });
    try {
      const { redis } = await clientOf(g);
      const state = new RedisState(redis, 'kill:');
      for (let i = 0; i < 3; i++) await state.count('hits', 1, { ttlMs: 60_000 });
      await g.synced();
      const { promoted } = await g.killPrimary();
      const killedAt = Date.now();
      // While there is no primary every command fails at once (nothing queued, nothing hangs).
      let failed = 0;
      let value: number | null = null;
      const end = Date.now() + 45_000;
      while (value === null && Date.now() < end) {
        const t = Date.now();
        value = await state.count('hits', 1, { ttlMs: 60_000 }).then(
          (r) => r.value,
          () => null,
        );
        if (value === null) {
          failed++;
          assert.ok(Date.now() - t < 10_000, 'a command without a primary fails instead of hanging');
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const { to } = await promoted;
      process.stdout.write(
        `killed primary: ${failed} commands failed, the client wrote to the new one after ${Date.now() - killedAt} ms\n`,
      );
      // At least 4: the counts made before the kill reached the replica (a failed command may still
      // have run on the new primary if only its answer was late, so not exactly 4).
      assert.ok(value !== null && value >= 4, `the count made before the kill is there: ${value}`);
      assert.ok(failed > 0, 'commands failed while there was no primary');
      // Which server it now talks to. Sentinel's switch can make the client reconnect once more
      // right after the first write landed (commands then fail at once, as above): ask until one
      // answers.
      let port = 0;
      for (const until = Date.now() + 30_000; !port && Date.now() < until; ) {
        port = await redis.config('GET', 'port').then(
          (r) => Number((r as string[])[1]),
          async () => {
            await new Promise((r) => setTimeout(r, 100));
            return 0;
          },
        );
      }
      assert.equal(port, to);
    } finally {
      await g.stop();
    }
  });

  it('refuses reservations while the sentinels fail over, so none it acknowledged is lost', async () => {
    // The old primary acknowledges writes for about a second after the replica was promoted, and
    // they are gone once it resyncs (without the hold, 1,200 of 3,600 reservations in one run).
    const g = await startSentinels({ password, sentinelPassword });
    try {
      const { redis } = await clientOf(g);
      const state = new RedisState(redis, 'hold:');
      await state.poolInit('p', new Map());
      await g.synced();
      const ok: string[] = [];
      let refused = 0;
      let done = false;
      let n = 0;
      const reserving = (async () => {
        while (!done) {
          const id = `r${++n}`;
          const got = await state.reserve('p', id, 1, 1e12, 120_000).catch(() => 'refused' as const);
          if (got === 'ok') ok.push(id);
          else {
            refused++;
            await new Promise((r) => setTimeout(r, 5));
          }
        }
      })();
      let to = 0;
      try {
        await new Promise((r) => setTimeout(r, 200));
        ({ to } = await g.failover());
        // Until the client writes to the new primary, and ten reservations more.
        for (let i = 0; i < 300; i++) {
          const port = await redis.config('GET', 'port').then(
            (r) => Number((r as string[])[1]),
            () => 0,
          );
          if (port === to) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        const before = ok.length;
        for (let i = 0; i < 300 && ok.length < before + 10; i++) await new Promise((r) => setTimeout(r, 10));
      } finally {
        done = true;
        await reserving;
      }
      let lost: string[] | null = null;
      for (let i = 0; i < 100 && lost === null; i++)
        lost = await state.keep('p', ok, 120_000).catch(async () => {
          await new Promise((r) => setTimeout(r, 100));
          return null;
        });
      process.stdout.write(
        `failover hold: ${ok.length} reservations acknowledged, ${refused} refused, ${lost?.length} lost\n`,
      );
      assert.deepEqual(lost, [], 'every acknowledged reservation is on the new primary');
      assert.ok(refused > 0, 'reservations were refused during the failover');
      assert.match(lines.join(''), /redis failover under way; holding quota reservations/);
    } finally {
      await g.stop();
    }
  });
});

// The space quota under concurrency: reservations that race never pass the limit, in memory and on a
// real Redis shared by two instances; failed writes give their space back; a dead process's
// reservation expires; the committed count starts from what is already stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { MemoryQuotaStore, QuotaFullError, type QuotaStore, RedisQuotaStore, SpaceQuota } from './quota.ts';

const logger = pino({ level: 'silent' });

function quota(store: QuotaStore, limit: number, stored = 0, o: { ttlMs?: number; stepBytes?: number } = {}) {
  return new SpaceQuota({ limit, store, count: async () => stored, failMode: 'closed', logger, ...o });
}

/** Streams `size` bytes in `chunk`-sized steps through a reservation, committing at the end. */
async function write(q: SpaceQuota, size: number, declared: number, chunk = 64 * 1024): Promise<boolean> {
  let r: Awaited<ReturnType<SpaceQuota['reserve']>> | undefined;
  try {
    r = await q.reserve(declared);
    for (let seen = 0; seen < size; ) {
      seen = Math.min(size, seen + chunk);
      await r.ensure(seen);
      await new Promise((res) => setImmediate(res)); // let the other writers interleave
    }
    await r.commit(size);
    return true;
  } catch (err) {
    await r?.release();
    if (err instanceof QuotaFullError) return false;
    throw err;
  }
}

function sharedChecks(make: () => QuotaStore[]) {
  it('lets parallel writers with declared lengths store no more than the limit', async () => {
    const qs = make().map((s) => quota(s, 1024 * 1024));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => write(qs[i % qs.length]!, 900_000, 900_000)),
    );
    assert.deepEqual(results.filter(Boolean).length, 1);
    const u = await qs[0]!.usage();
    assert.deepEqual(u, { used: 900_000, reserved: 0 });
  });

  it('lets streamed writers (no declared length) store no more than the limit', async () => {
    const qs = make().map((s) => quota(s, 1024 * 1024, 0, { stepBytes: 64 * 1024 }));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => write(qs[i % qs.length]!, 300_000, 0)),
    );
    const stored = results.filter(Boolean).length * 300_000;
    // Which writers win depends on the interleaving (all may lose); none may push past the limit.
    assert.ok(stored <= 1024 * 1024, `stored ${stored}`);
    assert.deepEqual(
      await qs[0]!.usage(),
      { used: stored, reserved: 0 },
      'failed writers released their space',
    );
  });

  it('starts from the bytes already stored and refuses at once when full', async () => {
    const [s] = make();
    const q = quota(s!, 1000, 1000);
    await assert.rejects(q.reserve(0), QuotaFullError);
    await q.adjust(-400); // a file was deleted
    const r = await q.reserve(400);
    await assert.rejects(q.reserve(1), QuotaFullError, 'the reservation holds the space');
    await r.release();
    assert.ok(await q.reserve(400));
  });
}

describe('space quota (memory)', () => {
  sharedChecks(() => [new MemoryQuotaStore()]);

  it('drops the reservation of a writer that stopped refreshing it', async () => {
    const store = new MemoryQuotaStore();
    const q = quota(store, 1000, 0, { ttlMs: 30 });
    const r = await q.reserve(1000);
    q.track(r, false); // its process "died": no more heartbeats
    await new Promise((res) => setTimeout(res, 60));
    assert.ok(await q.reserve(1000), 'the space came back');
    q.close();
  });
});

describe('space quota (Redis, two instances)', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const conns: Redis[] = [];
  let n = 0;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await redis?.stop();
  });
  const pair = () => {
    const prefix = `q${++n}:`;
    return [0, 1].map(() => {
      const c = new Redis(redis.url);
      conns.push(c);
      return new RedisQuotaStore(c, prefix);
    });
  };
  sharedChecks(pair);

  it('keeps a running writer alive past the expiry and drops a dead one', async () => {
    const [a, b] = pair();
    const qa = quota(a!, 1000, 0, { ttlMs: 300 });
    const qb = quota(b!, 1000, 0, { ttlMs: 300 });
    const alive = await qa.reserve(500); // refreshed every 100 ms by qa's heartbeat
    const dead = await qb.reserve(500);
    qb.track(dead, false);
    await new Promise((res) => setTimeout(res, 600));
    assert.ok(await qb.reserve(500), "the dead writer's half came back");
    await assert.rejects(qb.reserve(1), QuotaFullError, 'the live one still holds its half');
    await alive.commit(500);
    qa.close();
    qb.close();
  });
});

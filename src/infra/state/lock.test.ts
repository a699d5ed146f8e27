// Lease locks in memory and on a real Redis: exclusion, bounded waits, release, renewal while held,
// and a lapsed lease of a holder that stopped renewing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { type LockStore, Locks, MemoryLockStore, RedisLockStore } from './lock.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function contract(name: string, make: () => LockStore) {
  describe(`locks (${name})`, () => {
    it('gives a lock to one holder at a time and to the next after release', async () => {
      const locks = new Locks(make());
      const first = await locks.acquire('a', { waitMs: 0, ttlMs: 5000 });
      assert.ok(first);
      assert.equal(await locks.acquire('a', { waitMs: 0, ttlMs: 5000 }), null);
      assert.equal(await locks.acquire('a', { waitMs: 120, ttlMs: 5000 }), null);
      assert.ok(await locks.acquire('b', { waitMs: 0, ttlMs: 5000 }), 'other names are independent');
      await first.release();
      const second = await locks.acquire('a', { waitMs: 0, ttlMs: 5000 });
      assert.ok(second);
      await second.release();
    });

    it('hands a busy lock to a waiter once it is released', async () => {
      const locks = new Locks(make());
      const first = await locks.acquire('w', { waitMs: 0, ttlMs: 5000 });
      const waiting = locks.acquire('w', { waitMs: 5000, ttlMs: 5000 });
      await sleep(100);
      await first?.release();
      const got = await waiting;
      assert.ok(got);
      await got.release();
    });

    it('keeps a held lock past its lease by renewing it', async () => {
      const locks = new Locks(make());
      const held = await locks.acquire('r', { waitMs: 0, ttlMs: 300 });
      await sleep(700);
      assert.equal(await locks.acquire('r', { waitMs: 0, ttlMs: 300 }), null);
      await held?.release();
    });

    it('lets the lease of a holder that stopped renewing lapse, and its late release is harmless', async () => {
      const store = make();
      assert.equal(await store.tryTake('d', 'dead-holder', 200), true);
      const locks = new Locks(store);
      assert.equal(await locks.acquire('d', { waitMs: 0, ttlMs: 5000 }), null);
      const got = await locks.acquire('d', { waitMs: 2000, ttlMs: 5000 });
      assert.ok(got);
      await store.drop('d', 'dead-holder');
      assert.equal(await locks.acquire('d', { waitMs: 0, ttlMs: 5000 }), null, 'still held by the new owner');
      await got.release();
    });
  });
}

contract('memory', () => new MemoryLockStore());

describe('on Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const clients: Redis[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await redis?.stop();
  });
  const store = () => {
    const c = new Redis(redis.url);
    clients.push(c);
    return new RedisLockStore(c, 'test:lock:');
  };
  contract('redis', store);

  it('excludes holders on two connections (two instances)', async () => {
    const a = new Locks(store());
    const b = new Locks(store());
    const held = await a.acquire('shared', { waitMs: 0, ttlMs: 5000 });
    assert.ok(held);
    assert.equal(await b.acquire('shared', { waitMs: 100, ttlMs: 5000 }), null);
    await held.release();
    const got = await b.acquire('shared', { waitMs: 0, ttlMs: 5000 });
    assert.ok(got);
    await got.release();
  });
});

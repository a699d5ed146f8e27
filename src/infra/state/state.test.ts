// The shared-state contract: the same cases against the memory layer and a real redis-server (two
// connections standing for two instances). Every limit is built on these primitives, so a case that
// passes on one and fails on the other is a behaviour difference between one instance and several.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { LeaseLost, Leases } from './lease.ts';
import { MemoryState } from './memory.ts';
import { RedisState } from './redis-state.ts';
import type { SharedState } from './state.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;
const fresh = (s: string) => `${s}-${++seq}-${Date.now().toString(36)}`;
/** The abort reason once `signal` fires (lease timers are unref'd: this keeps the test alive meanwhile). */
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => {
    const alive = setTimeout(() => resolve(new Error('never aborted')), 10_000);
    const done = () => {
      clearTimeout(alive);
      resolve(signal.reason);
    };
    if (signal.aborted) done();
    else signal.addEventListener('abort', done, { once: true });
  });

/** `make()` gives two handles on one shared state (two instances); memory gives the same object twice. */
function contract(name: string, make: () => [SharedState, SharedState]) {
  describe(`shared state (${name})`, { timeout: 60_000 }, () => {
    describe('counters', () => {
      it('counts a fixed window that starts with its first hit and ends after ttlMs', async () => {
        const [a, b] = make();
        const k = fresh('win');
        const first = await a.count(k, 1, { ttlMs: 1500 });
        assert.deepEqual([first.value, first.ok], [1, true]);
        assert.ok(first.ttlMs > 0 && first.ttlMs <= 1500, String(first.ttlMs));
        assert.equal((await b.count(k, 1, { ttlMs: 1500 })).value, 2, 'the other instance adds to it');
        await sleep(1700);
        assert.equal((await b.count(k, 1, { ttlMs: 1500 })).value, 1, 'a new window starts afresh');
      });

      it('refuses an addition past max and leaves the value as it was', async () => {
        const [a] = make();
        const k = fresh('max');
        assert.deepEqual(
          [(await a.count(k, 2, { max: 3 })).ok, (await a.count(k, 2, { max: 3 })).ok],
          [true, false],
        );
        assert.deepEqual(await a.counters([k]), [2]);
        assert.equal((await a.count(k, 1, { max: 3 })).ok, true);
      });

      it('hands out exactly max under 40 parallel takes from two instances', async () => {
        const [a, b] = make();
        const k = fresh('race');
        const rs = await Promise.all(
          Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).count(k, 1, { max: 3 })),
        );
        assert.equal(rs.filter((r) => r.ok).length, 3);
        assert.deepEqual(await a.counters([k]), [3]);
      });

      it('adds batches that live until their window end, and forgets on demand', async () => {
        const [a, b] = make();
        const k1 = fresh('m1');
        const k2 = fresh('m2');
        const end = Date.now() + 400;
        assert.deepEqual(
          await a.countMany([
            { key: k1, by: 5, expireAt: end },
            { key: k2, by: 7, expireAt: end },
          ]),
          [5, 7],
        );
        assert.deepEqual(await b.countMany([{ key: k1, by: 1, expireAt: end }]), [6]);
        assert.deepEqual(await b.counters([k1, k2, fresh('none')]), [6, 7, 0]);
        await a.forget([k2]);
        assert.deepEqual(await b.counters([k2]), [0]);
        await sleep(500);
        assert.deepEqual(await a.counters([k1]), [0], 'gone after expireAt');
      });
    });

    describe('flags', () => {
      it('holds a flag with its value for its life only', async () => {
        const [a, b] = make();
        const k = fresh('flag');
        assert.equal(await b.flag(k), null);
        await a.setFlag(k, 1500, 'v1');
        const f = await b.flag(k);
        assert.equal(f?.value, 'v1');
        assert.ok(f && f.ttlMs > 0 && f.ttlMs <= 1500);
        await sleep(1700);
        assert.equal(await b.flag(k), null);
      });
    });

    describe('leases', () => {
      it('gives a lease to one owner, renews and drops only for that owner, and lapses', async () => {
        const [a, b] = make();
        const k = fresh('lease');
        assert.equal(await a.takeLease(k, 'one', 5000), true);
        assert.equal(await b.takeLease(k, 'two', 5000), false);
        assert.equal(await b.renewLease(k, 'two', 5000), false, 'not the owner');
        await b.dropLease(k, 'two');
        assert.equal(await b.takeLease(k, 'two', 5000), false, "a stranger's drop is ignored");
        assert.equal(await a.renewLease(k, 'one', 200), true);
        await sleep(400);
        assert.equal(await a.renewLease(k, 'one', 300), false, 'lapsed: lost');
        assert.equal(await b.takeLease(k, 'two', 300), true, 'taken over after the lapse');
        await b.dropLease(k, 'two');
        assert.equal(await a.takeLease(k, 'one', 300), true);
      });

      it('keeps a held lease past its life by renewing, and excludes a waiter until release', async () => {
        const [a, b] = make();
        const k = fresh('held');
        const held = await new Leases(a).acquire(k, { waitMs: 0, ttlMs: 1500 });
        assert.ok(held);
        await sleep(2500);
        assert.equal(held.signal.aborted, false);
        assert.equal(await new Leases(b).acquire(k, { waitMs: 100, ttlMs: 1500 }), null);
        const waiting = new Leases(b).acquire(k, { waitMs: 5000, ttlMs: 1500 });
        await held.release();
        const next = await waiting;
        assert.ok(next);
        await next.release();
      });

      it('tells the holder at once when a renewal finds its lease gone', async () => {
        const [a, b] = make();
        const k = fresh('lost');
        // A renewal that finds another owner (the lease lapsed while this process was frozen).
        const gone = Object.create(a, { renewLease: { value: async () => false } }) as SharedState;
        const held = await new Leases(gone).acquire(k, { waitMs: 0, ttlMs: 3000 });
        assert.ok(held);
        const reason = await aborted(held.signal);
        // At the first renewal (a third of the lease), not when the lease would have run out.
        assert.ok(reason instanceof LeaseLost && reason.how === 'taken', String(reason));
        await held.release();
        assert.equal(await b.takeLease(k, 'next', 300), true);
      });

      it('sends the drop of a released lease again when the store is reached again (a failover lost it)', async () => {
        const [a, b] = make();
        const k = fresh('redrop');
        // The drop lands on a primary that is demoted before it replicated (or fails outright): the
        // new primary still holds the lease. A reconnection makes the releaser send it again.
        let lost = true;
        let reconnect = () => {};
        const failing = Object.create(a, {
          dropLease: { value: (n: string, o: string) => (lost ? Promise.resolve() : a.dropLease(n, o)) },
          onReconnect: {
            value: (fn: () => void) => {
              reconnect = fn;
            },
          },
        }) as SharedState;
        const held = await new Leases(failing).acquire(k, { waitMs: 0, ttlMs: 5000 });
        assert.ok(held);
        await held.release();
        assert.equal(await b.takeLease(k, 'next', 5000), false, 'the lost drop left the lease held');
        lost = false;
        reconnect();
        let free = false;
        for (let i = 0; i < 100 && !free; i++)
          free = await b.takeLease(k, 'next', 5000).then((ok) => ok || sleep(20).then(() => false));
        assert.equal(free, true, 'dropped again after the reconnection');
        await b.dropLease(k, 'next');
      });

      it('sends again every lost drop of one name, not only the one of its last holder', async () => {
        const [a, b] = make();
        const k = fresh('redrop2');
        // On the old primary one holder took and dropped the lease, then another holder did; the
        // new primary got only the first take. Both drops are sent again on reconnection.
        const owners: string[] = [];
        let reconnect = () => {};
        const failing = Object.create(a, {
          dropLease: {
            value: async (n: string, o: string) => {
              owners.push(o);
              await a.dropLease(n, o); // lands on the old primary
            },
          },
          onReconnect: {
            value: (fn: () => void) => {
              reconnect = fn;
            },
          },
        }) as SharedState;
        const leases = new Leases(failing);
        for (let i = 0; i < 2; i++) {
          const held = await leases.acquire(k, { waitMs: 0, ttlMs: 5000 });
          assert.ok(held);
          await held.release();
        }
        assert.equal(owners.length, 2);
        // The promoted replica: the first holder's take only.
        assert.equal(await a.takeLease(k, owners[0] as string, 5000), true);
        reconnect();
        let free = false;
        for (let i = 0; i < 100 && !free; i++)
          free = await b.takeLease(k, 'next', 5000).then((ok) => ok || sleep(20).then(() => false));
        assert.equal(free, true, "the first holder's drop was sent again");
        await b.dropLease(k, 'next');
      });

      it('aborts the holder once its lease runs out without a confirmed renewal', async () => {
        const [a, b] = make();
        const k = fresh('silent');
        // Renewals that never answer (Redis frozen): the holder gives up by its own clock.
        const frozen = Object.create(a, {
          renewLease: { value: () => new Promise(() => {}) },
        }) as SharedState;
        const held = await new Leases(frozen).acquire(k, { waitMs: 0, ttlMs: 300 });
        assert.ok(held);
        const reason = await aborted(held.signal);
        assert.ok(reason instanceof LeaseLost && reason.how === 'lapsed', String(reason));
        await sleep(100);
        assert.equal(await b.takeLease(k, 'next', 300), true, 'the lapsed lease is free for the next holder');
      });
    });

    describe('hashes and rankings', () => {
      it('adds to hash fields from two instances and sets text fields', async () => {
        const [a, b] = make();
        const k = fresh('hash');
        await a.hashAdd([{ key: k, fields: { x: 2, y: 1 }, ttlMs: 5000 }]);
        await b.hashAdd([{ key: k, fields: { x: 3 }, ttlMs: 5000 }]);
        await b.hashSet(k, { note: 'hi' }, 5000);
        const [h, none] = await a.hashGet([k, fresh('none')]);
        assert.deepEqual(h, { x: '5', y: '1', note: 'hi' });
        assert.deepEqual(none, {});
        await a.hashDel(k, ['y', 'note']);
        assert.deepEqual((await b.hashGet([k]))[0], { x: '5' });
      });

      it('lets a hash lapse after its ttl', async () => {
        const [a] = make();
        const k = fresh('hlapse');
        await a.hashAdd([{ key: k, fields: { x: 1 }, ttlMs: 200 }]);
        await sleep(300);
        assert.deepEqual(await a.hashGet([k]), [{}]);
      });

      it('keeps a ranking bounded to its heaviest members, highest first', async () => {
        const [a, b] = make();
        const k = fresh('rank');
        await a.rankAdd([{ key: k, members: [['heavy', 100]], keep: 3, ttlMs: 5000 }]);
        for (let i = 0; i < 20; i++)
          await b.rankAdd([{ key: k, members: [[`m${i}`, i % 5]], keep: 3, ttlMs: 5000 }]);
        await a.rankAdd([{ key: k, members: [['heavy', 1]], keep: 3, ttlMs: 5000 }]);
        const [top] = await b.rankTop([{ key: k, n: 10 }]);
        assert.equal(top?.length, 3);
        assert.deepEqual(top?.[0], ['heavy', 101]);
        assert.deepEqual((await a.rankTop([{ key: fresh('none'), n: 5 }]))[0], []);
      });
    });

    describe('reservation pools', () => {
      it('answers unknown until the pool is counted, then checks the ledger plus reservations', async () => {
        const [a, b] = make();
        const p = fresh('pool');
        assert.equal(await a.reserve(p, 'r1', 10, 100, 5000), 'unknown');
        await a.poolInit(p, new Map([['files/x', 60]]));
        assert.equal(await b.reserve(p, 'r1', 30, 100, 5000), 'ok');
        assert.equal(await a.reserve(p, 'r2', 11, 100, 5000), 'full');
        assert.equal(await a.reserve(p, 'r2', 10, 100, 5000), 'ok');
        assert.deepEqual(await b.poolUsage(p), { settled: 60, reserved: 40 });
      });

      it('counts a growing reservation once, at its latest size', async () => {
        const [a, b] = make();
        const p = fresh('grow');
        await a.poolInit(p, new Map());
        assert.equal(await a.reserve(p, 'up', 100, 250, 5000), 'ok');
        assert.equal(await b.reserve(p, 'up', 200, 250, 5000), 'ok', 'grown to 200, not 100 + 200');
        assert.deepEqual(await a.poolUsage(p), { settled: 0, reserved: 200 });
        assert.equal(await b.reserve(p, 'other', 51, 250, 5000), 'full');
        assert.equal(await b.reserve(p, 'other', 50, 250, 5000), 'ok');
      });

      it('settles by ledger line: a key replaced twice counts once, a settle repeated changes nothing', async () => {
        const [a, b] = make();
        const p = fresh('ledger');
        await a.poolInit(p, new Map([['k', 100]]));
        await a.reserve(p, 'r1', 70, 1000, 5000);
        await b.reserve(p, 'r2', 50, 1000, 5000);
        // Both replacements of k settle to what the key holds now (50): never 100 - 100 - 100.
        await a.settle(p, 'r1', [{ key: 'k', size: 50 }]);
        await b.settle(p, 'r2', [{ key: 'k', size: 50 }]);
        await b.settle(p, 'r2', [{ key: 'k', size: 50 }]);
        assert.deepEqual(await a.poolUsage(p), { settled: 50, reserved: 0 });
        await a.settle(p, null, [
          { key: 'k', size: null },
          { key: 'j', size: 7 },
        ]);
        assert.deepEqual(await b.poolUsage(p), { settled: 7, reserved: 0 });
        assert.deepEqual([...(await b.poolLedger(p))], [['j', 7]]);
      });

      it('never lets 20 parallel reservations from two instances pass the limit', async () => {
        const [a, b] = make();
        const p = fresh('race');
        await a.poolInit(p, new Map([['old', 100]]));
        const rs = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).reserve(p, `r${i}`, 300, 1000, 5000)),
        );
        assert.equal(rs.filter((r) => r === 'ok').length, 3);
        assert.deepEqual(await a.poolUsage(p), { settled: 100, reserved: 900 });
      });

      it('lets a reservation that is not kept lapse, and reports it lost to keep()', async () => {
        const [a, b] = make();
        const p = fresh('lapse');
        await a.poolInit(p, new Map());
        await a.reserve(p, 'alive', 10, 100, 3000);
        await a.reserve(p, 'dead', 80, 100, 200);
        await sleep(400);
        assert.deepEqual(await b.keep(p, ['alive', 'dead'], 3000), ['dead']);
        assert.deepEqual(await b.poolUsage(p), { settled: 0, reserved: 10 });
        assert.equal(await b.reserve(p, 'new', 90, 100, 3000), 'ok', "the dead one's space is back");
      });

      it('replaces the ledger on a fresh count and keeps the reservations', async () => {
        const [a, b] = make();
        const p = fresh('init');
        await a.poolInit(p, new Map([['x', 1]]));
        await a.reserve(p, 'r', 5, 100, 5000);
        const big = new Map(Array.from({ length: 2500 }, (_, i) => [`f${i}`, 2] as const));
        await b.poolInit(p, big);
        assert.deepEqual(await a.poolUsage(p), { settled: 5000, reserved: 5 });
        assert.equal((await a.poolLedger(p)).size, 2500);
      });
    });
  });
}

contract('memory', () => {
  const s = new MemoryState();
  return [s, s];
});

describe('shared state on a real Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const conns: Redis[] = [];
  before(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) conns.push(new Redis(redis.url, { lazyConnect: false }));
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await redis?.stop();
  });
  contract('redis', () => [new RedisState(conns[0] as Redis, 't:'), new RedisState(conns[1] as Redis, 't:')]);
});

// The space quota on the shared state, in memory and on a real Redis shared by two instances,
// against a stand-in store (a Map of key -> size): parallel writers never pass the limit, parallel
// replacements of one key leave the count equal to what the key holds, a growing reservation counts
// once, failures release, a dead writer's reservation lapses, drift is corrected by reconcile, the
// quota refuses (503) while its store is away, a settle that could not land is retried, and a
// reservation that ran on the store after its caller timed out is dropped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { MemoryState } from '../state/memory.ts';
import { RedisState } from '../state/redis-state.ts';
import type { SharedState } from '../state/state.ts';
import { QuotaFullError, SpaceQuota } from './quota.ts';

const logger = pino({ level: 'silent' });
let seq = 0;

/** One store (what the blobs hold) and quotas of several instances on it. */
function setup(states: SharedState[], limit: number, o: { ttlMs?: number; stepBytes?: number } = {}) {
  const store = new Map<string, number>();
  const pool = `q${++seq}-${Date.now()}`;
  const qs = states.map(
    (state) =>
      new SpaceQuota({
        limit,
        state,
        pool,
        list: async () => new Map(store),
        head: async (k) => store.get(k) ?? null,
        logger,
        retryMs: 50,
        ...o,
      }),
  );
  const stored = () => [...store.values()].reduce((a, b) => a + b, 0);
  return { store, qs, stored };
}

const tick = () => new Promise((r) => setImmediate(r));

/** Streams `size` bytes into `key` through quota `q`, publishing at the end; false when refused. */
async function write(
  q: SpaceQuota,
  store: Map<string, number>,
  key: string,
  size: number,
  declared: number,
  chunk = 64 * 1024,
): Promise<boolean> {
  let r: Awaited<ReturnType<SpaceQuota['reserve']>> | undefined;
  try {
    r = await q.reserve(declared);
    for (let seen = 0; seen < size; ) {
      seen = Math.min(size, seen + chunk);
      await r.ensure(seen);
      await tick(); // let the other writers interleave
    }
  } catch (err) {
    await r?.release();
    if (err instanceof QuotaFullError) return false;
    throw err;
  }
  store.set(key, size);
  await r.settle(key);
  return true;
}

function shared(name: string, make: () => SharedState[]) {
  describe(`files quota (${name})`, { timeout: 60_000 }, () => {
    it('lets parallel writers with declared lengths store no more than the limit', async () => {
      const { store, qs, stored } = setup(make(), 1024 * 1024);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => write(qs[i % qs.length]!, store, `k${i}`, 900_000, 900_000)),
      );
      assert.equal(results.filter(Boolean).length, 1);
      assert.deepEqual(await qs[0]!.usage(), { used: stored(), reserved: 0 });
    });

    it('lets streamed writers (no declared length) store no more than the limit', async () => {
      const { store, qs, stored } = setup(make(), 1024 * 1024, { stepBytes: 64 * 1024 });
      await Promise.all(
        Array.from({ length: 8 }, (_, i) => write(qs[i % qs.length]!, store, `s${i}`, 300_000, 0)),
      );
      assert.ok(stored() <= 1024 * 1024, `stored ${stored()}`);
      assert.deepEqual(await qs[0]!.usage(), { used: stored(), reserved: 0 });
    });

    it('counts a growing reservation once: one streamed writer fills 90% of the quota', async () => {
      const { store, qs } = setup(make(), 1024 * 1024, { stepBytes: 64 * 1024 });
      const q = qs[0]!;
      const r = await q.reserve(0);
      for (let seen = 0; seen < 900_000; seen += 50_000) {
        await r.ensure(seen + 50_000);
        // The pool holds this writer's latest total, never the sum of its steps.
        assert.equal((await q.usage()).reserved, r.bytes);
      }
      store.set('big', 900_000);
      await r.settle('big');
      assert.deepEqual(await q.usage(), { used: 900_000, reserved: 0 });
    });

    it('leaves the count equal to the store after parallel replacements of one key', async () => {
      const { store, qs, stored } = setup(make(), 10 * 1024 * 1024);
      store.set('same', 2_000_000);
      await qs[0]!.reconcile();
      // Each replacement publishes its own size; whichever lands last is what the key holds.
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          write(qs[i % qs.length]!, store, 'same', 500_000 + i * 1000, 600_000),
        ),
      );
      assert.ok(results.every(Boolean));
      assert.deepEqual(await qs[1 % qs.length]!.usage(), { used: stored(), reserved: 0 });
      assert.equal(stored(), store.get('same'));
    });

    it('keeps the count exact under a mix of uploads, replacements and deletes', async () => {
      const { store, qs, stored } = setup(make(), 3 * 1024 * 1024);
      const ops = Array.from({ length: 40 }, (_, i) => async () => {
        const q = qs[i % qs.length]!;
        const key = `m${i % 6}`;
        if (i % 5 === 4) {
          store.delete(key);
          await q.settle(key);
        } else await write(q, store, key, 100_000 + ((i * 7919) % 400_000), i % 2 ? 0 : 600_000);
      });
      await Promise.all(ops.map((op) => op()));
      assert.ok(stored() <= 3 * 1024 * 1024);
      assert.deepEqual(await qs[0]!.usage(), { used: stored(), reserved: 0 });
    });

    it('lets the reservation of a writer that died lapse', async () => {
      const { qs } = setup(make(), 1000, { ttlMs: 1500 });
      const r = await qs[0]!.reserve(900);
      qs[0]!.close(); // the process dies: nothing keeps its reservation alive
      assert.ok(r);
      const other = qs[qs.length - 1]!;
      await assert.rejects(other.reserve(200), QuotaFullError);
      await new Promise((res) => setTimeout(res, 2000));
      const again = await other.reserve(900);
      await again.release();
    });

    it('corrects a count that drifted from the store, and says so', async () => {
      const { store, qs, stored } = setup(make(), 1_000_000);
      await write(qs[0]!, store, 'a', 1000, 1000);
      // Changed behind the quota's back (a crash between publish and settle).
      store.set('b', 5000);
      store.delete('a');
      assert.equal((await qs[0]!.usage()).used, 1000);
      assert.equal(await qs[0]!.reconcile(), 2);
      assert.deepEqual(await qs[0]!.usage(), { used: stored(), reserved: 0 });
      assert.equal(await qs[0]!.reconcile(), 0, 'nothing more to correct');
    });

    it('gives the parts of a resumable upload over to its file (credit)', async () => {
      const { store, qs, stored } = setup(make(), 1_000_000);
      const q = qs[0]!;
      assert.ok(await write(q, store, 'part-0', 600_000, 600_000));
      // The file reserves only what the counted parts do not cover; the parts go once it is stored.
      const r = await q.reserve(600_000, 600_000);
      await r.ensure(600_000);
      store.set('file', 600_000);
      await r.settle('file');
      store.delete('part-0');
      await q.settle('part-0');
      assert.deepEqual(await q.usage(), { used: stored(), reserved: 0 });
    });
  });
}

shared('memory', () => [new MemoryState()]);

describe('files quota when its store fails', () => {
  /** A memory state whose calls fail while `down` is set. */
  function flaky() {
    const s = new MemoryState();
    // down: calls fail and do nothing; late: calls run on the store but the caller gets a timeout
    // (a frozen Redis that works off its queued commands when it wakes).
    // lost: calls answer but land on another store (the old primary of a failover, whose writes
    // are gone once the client reconnects to the new one: reconnect()).
    const old = new MemoryState();
    const listeners: (() => void)[] = [];
    const ctl = {
      down: false,
      late: false,
      lost: false,
      reconnect: () => {
        for (const f of listeners) f();
      },
    };
    const wrap = new Proxy(s, {
      get(target, prop, recv) {
        if (prop === 'onReconnect') return (fn: () => void) => void listeners.push(fn);
        const v = Reflect.get(target, prop, recv);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (ctl.down) return Promise.reject(new Error('ECONNREFUSED'));
          const out = (v as (...a: unknown[]) => unknown).apply(ctl.lost ? old : target, args);
          return ctl.late
            ? Promise.resolve(out).then(() => Promise.reject(new Error('Command timed out')))
            : out;
        };
      },
    });
    return { state: wrap as SharedState, ctl };
  }

  it('refuses a reservation with 503 while the store is away (fail closed)', async () => {
    const { state, ctl } = flaky();
    const { qs } = setup([state], 1000);
    await qs[0]!.reconcile();
    ctl.down = true;
    await assert.rejects(qs[0]!.reserve(10), { status: 503, code: 'QUOTA_UNAVAILABLE' });
    ctl.down = false;
    await (await qs[0]!.reserve(10)).release();
  });

  it('retries a settle that could not land until the count equals the store', async () => {
    const { state, ctl } = flaky();
    const { store, qs, stored } = setup([state], 1_000_000);
    const q = qs[0]!;
    await q.reconcile();
    const r = await q.reserve(5000);
    store.set('x', 5000);
    ctl.down = true;
    await r.settle('x'); // does not throw: kept for later
    await new Promise((res) => setTimeout(res, 150));
    ctl.down = false;
    for (let i = 0; i < 100 && (await q.usage()).used !== stored(); i++)
      await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(await q.usage(), { used: 5000, reserved: 0 });
    q.close();
  });

  it('writes again what a failover lost (a dropped reservation, a ledger line) once the client reconnects', async () => {
    const { state, ctl } = flaky();
    const { store, qs } = setup([state], 1_000_000);
    const q = qs[0]!;
    await q.reconcile();
    const r = await q.reserve(5000);
    const unused = await q.reserve(3000);
    ctl.lost = true;
    store.set('x', 5000);
    await r.settle('x');
    await unused.release();
    ctl.lost = false;
    // What the new primary holds: both reservations, no line for x.
    assert.deepEqual(await q.usage(), { used: 0, reserved: 8000 });
    ctl.reconnect();
    for (let i = 0; i < 100 && (await q.usage()).reserved !== 0; i++)
      await new Promise((res) => setTimeout(res, 20));
    assert.deepEqual(await q.usage(), { used: 5000, reserved: 0 });
    q.close();
  });

  it('gives back a reservation whose release failed as soon as the store answers again', async () => {
    const { state, ctl } = flaky();
    const { qs } = setup([state], 1_000_000);
    const q = qs[0]!;
    await q.reconcile();
    const r = await q.reserve(900_000);
    ctl.down = true;
    await r.release(); // does not throw: kept for later
    ctl.down = false;
    for (let i = 0; i < 100 && (await q.usage()).reserved !== 0; i++)
      await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(await q.usage(), { used: 0, reserved: 0 });
    await (await q.reserve(900_000)).release();
    q.close();
  });

  it('drops a reservation that ran on the store after its caller timed out, once the store answers', async () => {
    const { state, ctl } = flaky();
    const { qs } = setup([state], 1_000_000);
    const q = qs[0]!;
    await q.reconcile();
    ctl.late = true;
    await assert.rejects(q.reserve(900_000), { status: 503, code: 'QUOTA_UNAVAILABLE' });
    ctl.late = false;
    // Without the drop it would hold 900 000 bytes until its ttl (a minute) and refuse every upload.
    for (let i = 0; i < 100 && (await q.usage()).reserved !== 0; i++)
      await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(await q.usage(), { used: 0, reserved: 0 });
    await (await q.reserve(900_000)).release();
    q.close();
  });

  it('stops a writer whose reservation cannot be kept alive', async () => {
    const { state, ctl } = flaky();
    const { qs } = setup([state], 1_000_000, { ttlMs: 300 });
    const q = qs[0]!;
    await q.reconcile();
    const r = await q.reserve(1000);
    ctl.down = true;
    await new Promise((res) => setTimeout(res, 600));
    ctl.down = false;
    await assert.rejects(r.ensure(2000), { status: 503 });
    await r.release();
    q.close();
  });
});

describe('files quota on a real Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const conns: Redis[] = [];
  before(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) conns.push(new Redis(redis.url));
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await redis?.stop();
  });
  shared('two instances on redis', () => conns.map((c) => new RedisState(c, 'quota-test:')));
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairQueue, QueueFull } from './fair-queue.ts';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

const tick = () => new Promise((r) => setImmediate(r));

/** A queue whose tasks run until their gate opens, recording the order they started in. */
function harness(o: ConstructorParameters<typeof FairQueue>[0]) {
  const q = new FairQueue(o);
  const started: string[] = [];
  const gates = new Map<string, ReturnType<typeof gate>>();
  const run = (client: string, name: string) => {
    const g = gate();
    gates.set(name, g);
    return q.run(client, async () => {
      started.push(name);
      await g.opened;
      return name;
    });
  };
  const finish = async (name: string) => {
    gates.get(name)!.open();
    await tick();
  };
  return { q, started, run, finish };
}

describe('fair queue', () => {
  it('runs at most `concurrency`, queues up to `queueLength`, refuses the rest', async () => {
    const { q, started, run, finish } = harness({ concurrency: 2, queueLength: 1, clientShare: 1 });
    const runs = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3')];
    await assert.rejects(run('a', 'a4'), (e: unknown) => e instanceof QueueFull && e.scope === 'total');
    await assert.rejects(run('b', 'b1'), (e: unknown) => e instanceof QueueFull && e.scope === 'total');
    await tick();
    assert.deepEqual(started, ['a1', 'a2']);
    assert.deepEqual(q.stats, { running: 2, queued: 1, clients: 1 });
    await finish('a1');
    assert.deepEqual(started, ['a1', 'a2', 'a3']);
    await finish('a2');
    await finish('a3');
    assert.deepEqual(await Promise.all(runs), ['a1', 'a2', 'a3']);
    assert.deepEqual(q.stats, { running: 0, queued: 0, clients: 0 });
  });

  it("keeps one client within its share of the slots while another's work starts at once", async () => {
    const { q, started, run, finish } = harness({ concurrency: 4, queueLength: 8, clientShare: 0.5 });
    assert.equal(q.clientSlots, 2);
    const flood = ['f1', 'f2', 'f3', 'f4'].map((n) => run('flood', n));
    await tick();
    assert.deepEqual(started, ['f1', 'f2'], 'two free slots stay free for other clients');
    const other = run('other', 'o1');
    await tick();
    assert.deepEqual(started, ['f1', 'f2', 'o1']);
    await finish('o1');
    assert.equal(await other, 'o1');
    await finish('f1');
    assert.deepEqual(started, ['f1', 'f2', 'o1', 'f3']);
    for (const n of ['f2', 'f3', 'f4']) await finish(n);
    await Promise.all(flood);
    assert.deepEqual(q.stats, { running: 0, queued: 0, clients: 0 });
  });

  it('refuses a client past its share of the queue while others can still queue', async () => {
    const { q, run, finish } = harness({ concurrency: 1, queueLength: 4, clientShare: 0.5 });
    assert.equal(q.clientQueue, 2);
    const a = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3')];
    await assert.rejects(run('a', 'a4'), (e: unknown) => e instanceof QueueFull && e.scope === 'client');
    const b = [run('b', 'b1'), run('b', 'b2')];
    await assert.rejects(run('c', 'c1'), (e: unknown) => e instanceof QueueFull && e.scope === 'total');
    for (const n of ['a1', 'a2', 'b1', 'a3', 'b2']) await finish(n);
    await Promise.all([...a, ...b]);
  });

  it('serves waiting clients round-robin, not in arrival order', async () => {
    const { started, run, finish } = harness({ concurrency: 1, queueLength: 16, clientShare: 1 });
    const all = ['a1', 'a2', 'a3', 'a4', 'a5'].map((n) => run('a', n));
    all.push(run('b', 'b1'), run('b', 'b2'), run('c', 'c1'));
    await tick();
    for (const n of ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4', 'a5']) await finish(n);
    await Promise.all(all);
    assert.deepEqual(started, ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4', 'a5']);
  });

  it('frees the slot and the client when a task throws', async () => {
    const q = new FairQueue({ concurrency: 1, queueLength: 0, clientShare: 0.5 });
    await assert.rejects(
      q.run('a', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.deepEqual(q.stats, { running: 0, queued: 0, clients: 0 });
    assert.equal(await q.run('a', async () => 7), 7);
  });

  it('gives every client at least one slot, and one queue place when there is a queue', () => {
    const q = new FairQueue({ concurrency: 1, queueLength: 1, clientShare: 0.1 });
    assert.equal(q.clientSlots, 1);
    assert.equal(q.clientQueue, 1);
    assert.equal(new FairQueue({ concurrency: 3, queueLength: 0, clientShare: 0.1 }).clientQueue, 0);
    assert.throws(() => new FairQueue({ concurrency: 1, queueLength: 1, clientShare: 0 }), RangeError);
  });

  it('reports every change of its counts', async () => {
    const seen: string[] = [];
    const q = new FairQueue({
      concurrency: 1,
      queueLength: 1,
      clientShare: 1,
      onChange: (s) => seen.push(`${s.running}/${s.queued}`),
    });
    const g = gate();
    const first = q.run('a', () => g.opened);
    const second = q.run('b', async () => {});
    await tick();
    g.open();
    await Promise.all([first, second]);
    assert.deepEqual(seen, ['1/0', '1/1', '1/0', '1/0', '0/0']);
  });
});

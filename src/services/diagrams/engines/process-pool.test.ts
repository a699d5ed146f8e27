// The render processes: a layout past the deadline is killed with its process (the event loop keeps
// turning meanwhile) and a warm spare takes its place, a diagram that allocates past every limit
// ends its process and not this one (this test process is the server here), the kernel's memory
// bound is set on each process and follows it down after its idle collection, with glibc's
// allocator settings, an idle process collects its heap,
// an answer over its cap is refused before it crosses, and close() leaves no process behind.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { ProcessPool, type ProcessPoolOptions } from './process-pool.ts';
import { ALLOCATOR } from './render-child.ts';
import { RenderCrashed, type RenderJob, RenderTimeout } from './render-job.ts';

/** A complete graph: dot's crossing minimisation on it runs far past any render deadline. */
function bomb(n: number): string {
  const edges: string[] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) edges.push(`n${i} -> n${j}`);
  return `digraph { ${edges.join('; ')} }`;
}

const small: RenderJob = { engine: 'graphviz', source: 'digraph { a -> b }', format: 'svg', options: {} };
/** Issue 33's 93-byte request: a sequence of 50 million data objects. */
const VEGA_BOMB = '{"data":[{"name":"t","transform":[{"type":"sequence","start":0,"stop":5e7}]}]}';

function pool(o: Partial<ProcessPoolOptions> = {}): ProcessPool {
  return new ProcessPool({
    size: 1,
    spares: 0,
    timeoutMs: 60_000,
    heapMb: 256,
    memoryBytes: 512 * 1024 ** 2,
    maxOutputBytes: 32 * 1024 ** 2,
    idleMs: 0,
    nice: 10,
    ...o,
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('render processes', { timeout: 240_000 }, () => {
  it('kills a runaway layout at the deadline, keeps the event loop turning, and serves the next render from a warm spare', async () => {
    const events: string[] = [];
    const p = pool({ size: 2, spares: 1, timeoutMs: 3000, onEvent: (e) => events.push(e) });
    try {
      // Both slots and the spare up, the engine loaded in each (a cold start on a busy machine is slow).
      await Promise.all([p.run(small), p.run(small)]);
      await waitFor(() => p.stats().processes === 3, 'two processes and a spare', 60_000);
      const before = p.pids();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 50);
      const runaway = p.run({ ...small, source: bomb(120) });
      const other = await p.run(small);
      assert.equal(other.ok, true);
      await assert.rejects(runaway, RenderTimeout);
      clearInterval(ticker);
      assert.ok(ticks >= 10, `the event loop kept turning (${ticks} ticks)`);
      const killed = before.filter((pid) => !p.pids().includes(pid));
      assert.equal(killed.length, 1);
      await waitFor(() => !alive(killed[0]!), 'the killed process is gone');
      // Two renders at once right after the kill: both on warm processes, none waits for a start.
      events.length = 0;
      const both = await Promise.all([p.run(small), p.run(small)]);
      assert.ok(both.every((r) => r.ok));
      assert.deepEqual(
        events.filter((e) => e === 'cold'),
        [],
        'no render waited for a process start',
      );
      // And a spare is kept beside them again.
      await waitFor(() => p.stats().processes === 3, 'a spare beside two warm processes', 60_000);
    } finally {
      await p.close();
    }
  });

  it('ends only its own process on the 93-byte Vega request, and renders the next diagram', async () => {
    const p = pool({ timeoutMs: 120_000 });
    try {
      const err = await p.run({ engine: 'vega', source: VEGA_BOMB, format: 'svg', options: {} }).then(
        () => assert.fail('the bomb rendered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof RenderCrashed, String(err));
      assert.equal(err.memory, true, 'reported as running out of memory');
      const next = await p.run({ engine: 'vega', source: '{"marks":[]}', format: 'svg', options: {} });
      assert.equal(next.ok, true);
    } finally {
      await p.close();
    }
  });

  it('sets the kernel memory bound on each process above what its engines hold', async () => {
    const p = pool({ memoryBytes: 300 * 1024 ** 2 });
    try {
      assert.equal((await p.run(small)).ok, true);
      const pid = p.pids()[0]!;
      const limit = /^Max data size\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1];
      const data =
        Number(/^VmData:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
      assert.ok(limit, 'RLIMIT_DATA is set');
      assert.ok(Number(limit) > data, `above what it holds (${limit} > ${data})`);
      assert.ok(
        Number(limit) <= data + 300 * 1024 ** 2 + 64 * 1024 ** 2,
        `and not far above (${limit}, ${data})`,
      );
    } finally {
      await p.close();
    }
  });

  it('moves the memory bound down again once the idle collection gave memory back', async () => {
    const allowance = 128 * 1024 ** 2;
    const collected: unknown[] = [];
    const p = pool({
      memoryBytes: allowance,
      collectIdleMs: 1500,
      onEvent: (e) => e === 'collect' && collected.push(e),
    });
    const state = (pid: number) => ({
      limit: Number(/^Max data size\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1]),
      data: Number(/^VmData:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024,
    });
    try {
      // Garbage the heap keeps after each render: the second render's bound is set above it.
      const heavy = {
        engine: 'vega',
        source: VEGA_BOMB.replace('5e7', '4e5'),
        format: 'svg',
        options: {},
      } as const;
      for (let i = 0; i < 3; i++) assert.equal((await p.run(heavy)).ok, true);
      const pid = p.pids()[0]!;
      const high = state(pid);
      await waitFor(() => collected.length > 0, 'an idle collection', 60_000);
      // The same engine: loading another one lifts the bound and would set it afresh anyway.
      // (On Node 26 the collection gives back about 55 MiB here, past the quarter allowance that
      // moves the bound; the code before this case kept the higher bound and failed it.)
      assert.equal((await p.run({ ...heavy, source: VEGA_BOMB.replace('5e7', '10') })).ok, true);
      const after = state(pid);
      assert.ok(
        after.limit <= after.data + allowance + allowance / 4,
        `the bound follows what the process holds after its collection: limit ${after.limit}, data ${after.data} (before: limit ${high.limit}, data ${high.data})`,
      );
    } finally {
      await p.close();
    }
  });

  it('renders a Vega mark with an href instead of crashing', async () => {
    const p = pool();
    try {
      const spec = {
        marks: [
          {
            type: 'rect',
            encode: {
              enter: { width: { value: 10 }, height: { value: 10 }, href: { value: 'https://example.com/' } },
            },
          },
        ],
      };
      for (const s of [
        spec,
        {
          ...spec,
          marks: [{ ...spec.marks[0], encode: { enter: { href: { value: 'javascript:alert(1)' } } } }],
        },
      ]) {
        const r = await p.run({ engine: 'vega', source: JSON.stringify(s), format: 'svg', options: {} });
        assert.equal(r.ok, true, r.ok ? '' : r.message);
      }
      assert.equal(p.spawned, 1, 'one process rendered both');
    } finally {
      await p.close();
    }
  });

  it('refuses an answer over its cap, answers a syntax error as such, and leaves no process after close', async () => {
    const p = pool({ maxOutputBytes: 2000 });
    let pid = 0;
    try {
      const big = await p.run({ ...small, source: `digraph { ${bomb(8).slice(10, -2)} }` });
      assert.equal(big.ok, false);
      assert.equal(!big.ok && big.kind, 'too-large');
      const bad = await p.run({ ...small, source: 'digraph { a -> }' });
      assert.equal(!bad.ok && bad.kind, 'syntax');
      assert.match(!bad.ok ? bad.message : '', /syntax error in line 1/);
      pid = p.pids()[0]!;
    } finally {
      await p.close();
    }
    assert.deepEqual(p.pids(), []);
    await waitFor(() => !alive(pid), 'the process is gone');
  });

  it("starts each process with glibc's allocator settings and collects its heap once it is idle", async () => {
    const collected: Record<string, unknown>[] = [];
    const p = pool({ collectIdleMs: 1500, onEvent: (e, d) => e === 'collect' && collected.push(d) });
    try {
      assert.equal((await p.run(small)).ok, true);
      const pid = p.pids()[0]!;
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      for (const [k, v] of Object.entries(ALLOCATOR))
        assert.ok(env.includes(`${k}=${process.env[k] || v}`), `${k} in ${env.join(' ')}`);
      await waitFor(() => collected.length > 0, 'an idle collection', 60_000);
      const c = collected[0] as { pid: number; before: number; after: number };
      assert.equal(c.pid, pid);
      assert.ok(c.before > 0 && c.after > 0, `the heap went from ${c.before} to ${c.after} bytes`);
      // Node 20's V8 runs a plain full collection there, which may leave the heap as large.
      if (Number(process.versions.node.split('.')[0]) >= 26)
        assert.ok(c.after <= c.before, `the heap went from ${c.before} to ${c.after} bytes`);
    } finally {
      await p.close();
    }
  });

  it('lets every process go when idle, the spare too, and starts one again for the next diagram', async () => {
    const p = pool({ spares: 1, idleMs: 3000 });
    try {
      assert.equal((await p.run(small)).ok, true);
      await waitFor(() => p.stats().processes === 2, 'a spare beside the process that rendered', 60_000);
      const before = p.pids();
      const spawned = p.spawned;
      await waitFor(() => p.stats().processes === 0, 'no process left after the idle time', 60_000);
      // Reaped means their exits were handled (the pool's exit handler runs as each is reaped):
      // before the fix each one started a new spare there, and the pool never went below one.
      await waitFor(() => before.every((pid) => !alive(pid)), 'the idle processes are gone');
      assert.equal(p.stats().processes, 0, 'no spare started after the idle exits');
      assert.equal(p.spawned, spawned, 'no process started since');
      assert.equal((await p.run(small)).ok, true);
      assert.ok(p.stats().processes >= 1, 'a process is back for the next diagram');
    } finally {
      await p.close();
    }
  });
});

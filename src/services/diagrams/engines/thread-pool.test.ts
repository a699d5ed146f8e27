// The render threads: a layout past the deadline is stopped by ending its thread (the event loop
// keeps turning meanwhile), the next render gets a fresh thread, a render on another thread is not
// disturbed, and close() leaves no thread behind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ThreadPool, ThreadTimeout } from './thread-pool.ts';

/** A complete graph: dot's crossing minimisation on it runs far past any render deadline. */
function bomb(n: number): string {
  const edges: string[] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) edges.push(`n${i} -> n${j}`);
  return `digraph { ${edges.join('; ')} }`;
}

describe('render threads', { timeout: 120_000 }, () => {
  it('ends a runaway layout at the deadline without blocking the event loop or the other thread', async () => {
    const pool = new ThreadPool({ size: 2, timeoutMs: 3000, heapMb: 256, idleMs: 0 });
    try {
      const small = { engine: 'graphviz', source: 'digraph { a -> b }', format: 'svg', options: {} };
      // Both threads up with the engine loaded (a cold thread on a busy machine takes a second or two).
      for (let i = 0; i < 5 && pool.threadIds().length < 2; i++)
        await Promise.all([pool.run(small), pool.run(small)]);
      assert.equal(pool.threadIds().length, 2);
      const spawned = pool.spawned;
      const before = pool.threadIds();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 50);
      const runaway = pool.run({ ...small, source: bomb(120) });
      // Meanwhile the other thread renders.
      const other = await pool.run(small);
      assert.equal(other.ok, true);
      await assert.rejects(runaway, ThreadTimeout);
      clearInterval(ticker);
      assert.ok(ticks >= 10, `the event loop kept turning (${ticks} ticks)`);
      // The timed-out thread is gone and a replacement took its place at once.
      assert.equal(before.filter((id) => pool.threadIds().includes(id)).length, 1);
      assert.equal(pool.threadIds().length, 2);
      assert.equal(pool.spawned, spawned + 1);
      const both = await Promise.all([pool.run(small), pool.run(small)]);
      assert.ok(both.every((r) => r.ok));
    } finally {
      await pool.close();
    }
    assert.deepEqual(pool.threadIds(), []);
  });

  it('answers a syntax error as such, not as a crash', async () => {
    const pool = new ThreadPool({ size: 1, timeoutMs: 20_000, heapMb: 256, idleMs: 0 });
    try {
      const r = await pool.run({
        engine: 'graphviz',
        source: 'digraph { a -> }',
        format: 'svg',
        options: {},
      });
      assert.equal(r.ok, false);
      assert.equal(!r.ok && r.kind, 'syntax');
      assert.match(!r.ok ? r.message : '', /syntax error in line 1/);
    } finally {
      await pool.close();
    }
  });
});

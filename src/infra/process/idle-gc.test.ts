// The idle collection: when it runs (IdleSpell, from utilization readings) and what it does to this
// process's own heap (so this file runs in a process of its own: scripts/test-tiers.js ALONE).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collectForIdle, IDLE_UTILIZATION, IdleSpell } from './idle-gc.ts';

const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;

describe('idle collection', { timeout: 60_000 }, () => {
  it('collects after the given number of idle checks in a row, once per idle spell', () => {
    const spell = new IdleSpell(3);
    const idle = IDLE_UTILIZATION / 2;
    const busy = IDLE_UTILIZATION;
    assert.deepEqual(
      [idle, idle, busy, idle, idle, idle, idle, idle, busy, idle, idle, idle].map((u) => spell.next(u)),
      [false, false, false, false, false, true, false, false, false, false, false, true],
    );
  });

  it('collects what nothing holds, and leaves no gc function behind', async () => {
    const hadGc = typeof (globalThis as { gc?: unknown }).gc;
    let target: object | undefined = { big: new Array(1000).fill('x') };
    const ref = new WeakRef(target);
    target = undefined;
    // A WeakRef's target is kept until the job that made it ends.
    await new Promise((r) => setImmediate(r));
    const r = collectForIdle();
    assert.ok(r, 'this runtime gives no gc function');
    assert.equal(ref.deref(), undefined);
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, hadGc);
    assert.equal(
      runInNewContext('typeof gc'),
      'undefined',
      'a later vm context got gc: --expose-gc stayed on',
    );
  });

  it('shrinks a young generation a burst grew (Node 26)', {
    skip: Number(process.versions.node.split('.')[0]) < 26 && 'Node 20 keeps the young generation',
  }, () => {
    let keep: object[] = [];
    for (let i = 0; i < 2e6; i++) {
      keep.push({ i, s: `x${i}` });
      if (keep.length > 50_000) keep = [];
    }
    keep = [];
    const grown = newSpace();
    assert.ok(grown > 4 * 2 ** 20, `the burst grew the young generation to ${grown} bytes only`);
    const r = collectForIdle();
    assert.ok(newSpace() < grown / 2, `young generation ${grown} -> ${newSpace()} bytes`);
    assert.ok(r && r.after < r.before, `committed heap ${r?.before} -> ${r?.after}`);
  });
});

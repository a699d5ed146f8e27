// Two-instance fixtures: when one start fails (here one that never answers, within its deadline),
// startAll stops the instance that came up, so the test file fails instead of hanging.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DevutilProcess, startAll, startDevutilProcess } from './process.ts';

describe('startAll', { timeout: 120_000 }, () => {
  it('stops the instance that came up when the other start hangs, and fails', async () => {
    let up: DevutilProcess | undefined;
    const healthy = startDevutilProcess().then((p) => {
      up = p;
      return p;
    });
    // A process that never answers /healthz: the start gives up after its deadline and kills it.
    const hung = startDevutilProcess({}, [], {
      wrapper: ['sh', '-c', 'exec sleep 600', 'sh'],
      startTimeoutMs: 3000,
    });
    await assert.rejects(startAll([healthy, hung]), /did not come up/);
    assert.ok(up, 'the healthy instance had come up');
    assert.ok(
      up.proc.exitCode !== null || up.proc.signalCode !== null,
      'and was stopped before startAll failed',
    );
  });

  it('gives every instance when all come up', async () => {
    const [a, b] = await startAll([startDevutilProcess(), startDevutilProcess()]);
    try {
      assert.notEqual(a.port, b.port);
      for (const p of [a, b]) assert.equal((await fetch(`${p.url}/healthz`)).status, 200);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

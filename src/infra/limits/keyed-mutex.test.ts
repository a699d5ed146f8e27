import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedMutex } from './keyed-mutex.ts';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('keyed mutex', { timeout: 10_000 }, () => {
  it('runs holders of one key one at a time, in the order they asked', async () => {
    const m = new KeyedMutex();
    const first = deferred();
    const events: string[] = [];
    const a = m.run('k', async () => {
      events.push('a start');
      await first.promise;
      events.push('a end');
      return 'a';
    });
    const b = m.run('k', async () => {
      events.push('b');
      return 'b';
    });
    const c = m.run('k', async () => {
      events.push('c');
      return 'c';
    });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(events, ['a start']);
    first.resolve();
    assert.deepEqual(await Promise.all([a, b, c]), ['a', 'b', 'c']);
    assert.deepEqual(events, ['a start', 'a end', 'b', 'c']);
    assert.equal(m.size, 0);
  });

  it('does not make other keys wait', async () => {
    const m = new KeyedMutex();
    const held = deferred();
    const a = m.run('a', () => held.promise);
    assert.equal(await m.run('b', async () => 'b'), 'b');
    assert.equal(m.size, 1);
    held.resolve();
    await a;
    assert.equal(m.size, 0);
  });

  it('gives a holder its own error and lets the next one run', async () => {
    const m = new KeyedMutex();
    const held = deferred();
    const a = assert.rejects(
      m.run('k', () => held.promise),
      /first failed/,
    );
    const b = m.run('k', async () => 2);
    const c = assert.rejects(
      m.run('k', () => {
        throw new Error('sync');
      }),
      /sync/,
    );
    const d = m.run('k', async () => 4);
    held.reject(new Error('first failed'));
    await a;
    assert.equal(await b, 2);
    await c;
    assert.equal(await d, 4);
    assert.equal(m.size, 0);
  });
});

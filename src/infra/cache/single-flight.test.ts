import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlightTimeout, SingleFlight } from './single-flight.ts';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('single flight', () => {
  it('runs one computation per key and gives every caller its result', async () => {
    const f = new SingleFlight<string>();
    const d = deferred<string>();
    let calls = 0;
    const fn = () => {
      calls++;
      return d.promise;
    };
    const all = [f.run('k', fn), f.run('k', fn), f.run('k', fn)];
    const other = f.run('other', async () => 'o');
    assert.equal(f.size, 2);
    d.resolve('v');
    assert.deepEqual(await Promise.all(all), ['v', 'v', 'v']);
    assert.equal(await other, 'o');
    assert.equal(calls, 1);
    assert.equal(f.size, 0);
  });

  it('does not cache a failure: every waiter sees it, the next caller runs again', async () => {
    const f = new SingleFlight<number>();
    const d = deferred<number>();
    const a = f.run('k', () => d.promise);
    const b = f.run('k', async () => 99);
    d.reject(new Error('upstream down'));
    await assert.rejects(a, /upstream down/);
    await assert.rejects(b, /upstream down/);
    assert.equal(await f.run('k', async () => 2), 2);
  });

  it('releases the key when the computation throws synchronously', async () => {
    const f = new SingleFlight<number>();
    await assert.rejects(
      f.run('k', () => {
        throw new Error('sync');
      }),
      /sync/,
    );
    assert.equal(f.running('k'), undefined);
    assert.equal(await f.run('k', async () => 1), 1);
  });

  it('lets a waiter give up after waitMs while the computation goes on for the others', async () => {
    const f = new SingleFlight<string>();
    const d = deferred<string>();
    const starter = f.run('k', () => d.promise, { waitMs: 1 });
    const patient = f.run('k', async () => 'never');
    const hasty = f.run('k', async () => 'never', { waitMs: 20 });
    await assert.rejects(hasty, FlightTimeout);
    assert.ok(f.running('k'), 'still running after the waiter left');
    d.resolve('done');
    assert.equal(await starter, 'done', 'the caller that started it is never timed out');
    assert.equal(await patient, 'done');
  });
});

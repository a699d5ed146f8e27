// The disk tier's index alone (no files): recency and budget, write claims, and a directory scan's
// view merged with the changes made while it ran.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiskIndex, type Loaded } from './disk-index.ts';
import type { LiveEntry } from './sweep.ts';

const loaded = (key: string, bytes: number, version = 'v1'): Loaded<null> => ({
  entry: { key, size: bytes, meta: null, storedAt: 0, checkedAt: 0, expiresAt: null },
  version,
  bytes,
});
const live = (version: string, bytes: number, mtime: number): LiveEntry => ({ version, bytes, mtime });

describe('disk index', { timeout: 10_000 }, () => {
  it('evicts the least recently used first, and use() makes an entry recent', () => {
    const ix = new DiskIndex<null>();
    for (const h of ['a', 'b', 'c']) ix.publish(h, loaded(h, 10));
    const a = ix.get('a');
    assert.ok(a);
    ix.use('a', a);
    assert.deepEqual(ix.evict(20), [{ h: 'b', version: 'v1' }]);
    assert.equal(ix.bytes, 20);
    assert.equal(ix.evictions, 1);
    assert.deepEqual(ix.evict(5), [
      { h: 'c', version: 'v1' },
      { h: 'a', version: 'v1' },
    ]);
    assert.equal(ix.size, 0);
  });

  it('lets only the newest write of a key publish, and a delete cancel it', () => {
    const ix = new DiskIndex<null>();
    const first = ix.claim('k', 'k');
    const second = ix.claim('k', 'k');
    assert.equal(ix.owns('k', first), false);
    assert.equal(ix.owns('k', second), true);
    ix.release('k', first);
    assert.equal(ix.claimed('k'), true, 'releasing an old claim leaves the newer one');
    ix.remove('k');
    assert.equal(ix.owns('k', second), false);
    assert.equal(ix.claimed('k'), false);
  });

  it('adopts a read entry only if nothing changed it meanwhile', () => {
    const ix = new DiskIndex<null>();
    ix.publish('k', loaded('k', 10, 'v1'));
    const seen = ix.get('k');
    ix.publish('k', loaded('k', 12, 'v2'));
    ix.adopt('k', seen, loaded('k', 10, 'v1'));
    assert.equal(ix.get('k')?.version, 'v2', 'the older read lost to the newer write');
    assert.equal(ix.drop('k', seen), false, 'nor may it drop the newer entry');
    const claim = ix.claim('k', 'k');
    assert.equal(ix.drop('k', ix.get('k')), false, 'an entry being written is not dropped');
    ix.release('k', claim);
    assert.equal(ix.drop('k', ix.get('k')), true);
    assert.equal(ix.bytes, 0);
  });

  it('merges a scan: adopts unknown entries oldest first, reloads changed ones, forgets gone ones', () => {
    const ix = new DiskIndex<null>();
    ix.publish('same', loaded('same', 10, 'v1'));
    ix.publish('moved', loaded('moved', 10, 'v1'));
    ix.publish('gone', loaded('gone', 10, 'v1'));
    ix.startScan();
    ix.merge(
      new Map([
        ['same', live('v1', 10, 5)],
        ['moved', live('v9', 11, 5)],
        ['new-late', live('v1', 7, 300)],
        ['new-early', live('v1', 7, 100)],
      ]),
    );
    ix.endScan();
    assert.equal(ix.has('gone'), false);
    assert.ok(ix.get('same')?.entry, 'an unchanged entry keeps what was loaded');
    assert.deepEqual(ix.get('moved'), { bytes: 11, version: 'v9', entry: null });
    assert.equal(ix.bytes, 10 + 11 + 7 + 7);
    // Adopted entries are the least recent, oldest record first.
    assert.deepEqual(
      ix.evict(ix.bytes - 14).map((e) => e.h),
      ['new-early', 'new-late'],
    );
  });

  it('keeps what changed during a scan over the scan’s older view', () => {
    const ix = new DiskIndex<null>();
    ix.publish('k', loaded('k', 10, 'v1'));
    ix.startScan();
    ix.publish('k', loaded('k', 20, 'v2'));
    ix.remove('deleted');
    ix.merge(
      new Map([
        ['k', live('v1', 10, 1)],
        ['deleted', live('v1', 5, 1)],
      ]),
    );
    ix.endScan();
    assert.equal(ix.get('k')?.version, 'v2');
    assert.equal(ix.has('deleted'), false, 'an entry deleted during the scan is not adopted back');
    assert.equal(ix.bytes, 20);
  });
});

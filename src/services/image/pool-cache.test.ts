import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { DiskLru, MemoryLru } from './cache.ts';
import { outputSize, parseQuery } from './params.ts';

describe('caches', () => {
  const item = (n: number, fill = 1) => ({ body: Buffer.alloc(n, fill), meta: { id: String(n) } });

  it('memory LRU evicts the least recently used past its byte budget', () => {
    const m = new MemoryLru(4000);
    for (const k of ['a', 'b', 'c', 'd']) m.set(k, item(700));
    m.get('a');
    m.set('e', item(700));
    assert.ok(m.get('a'));
    assert.equal(m.get('b'), undefined);
    assert.ok(m.bytes <= 4000);
    m.set('huge', item(3000));
    assert.equal(m.get('huge'), undefined, 'an entry over a quarter of the budget is not kept');
  });

  it('disk LRU round-trips, survives a restart and stays under its budget', async () => {
    const dir = tempDir('devutil-image-disk-');
    const d = new DiskLru(dir, 10_000);
    await d.set('k1', item(2000, 7));
    const got = await d.get('k1');
    assert.ok(got?.body.equals(Buffer.alloc(2000, 7)));
    assert.equal(got?.meta['id'], '2000');
    for (let i = 0; i < 10; i++) await d.set(`k${i + 2}`, item(2000));
    assert.ok(d.bytes <= 10_000);
    const again = new DiskLru(dir, 10_000);
    assert.equal(again.bytes, d.bytes);
    assert.ok(await again.get('k11'));
    assert.equal(await again.get('k1'), undefined);
    const names = readdirSync(dir, { recursive: true }).map(String);
    assert.ok(
      names.every((n) => /^[0-9a-f]{2}(\/[0-9a-f]{40})?$/.test(n)),
      names.join(','),
    );
  });

  it('is off with a zero budget', async () => {
    const d = new DiskLru(tempDir(), 0);
    await d.set('k', item(10));
    assert.equal(await d.get('k'), undefined);
    const m = new MemoryLru(0);
    m.set('k', item(10));
    assert.equal(m.get('k'), undefined);
  });
});

describe('params', () => {
  const L = {
    defaultWidth: 1920,
    defaultHeight: 1080,
    maxWidth: 4096,
    maxHeight: 4096,
    maxPixels: 4096 * 3072,
  };
  it('defaults to webp, no effects, sizes from the source', () => {
    assert.deepEqual(parseQuery({}, L), {
      id: null,
      category: null,
      width: null,
      height: null,
      grayscale: false,
      blur: 0,
      format: 'webp',
    });
    assert.equal(parseQuery({ grayscale: '' }, L).grayscale, true);
    assert.equal(parseQuery({ grayscale: 'false' }, L).grayscale, false);
    assert.equal(parseQuery({ blur: '' }, L).blur, 5);
  });
  it('derives the missing side from the source proportions and clamps it to the caps', () => {
    const o = (width: number | null, height: number | null) => ({ ...parseQuery({}, L), width, height });
    assert.deepEqual(outputSize(o(null, null), 4000, 3000, L), [1920, 1080]);
    assert.deepEqual(outputSize(o(640, null), 4000, 3000, L), [640, 480]);
    assert.deepEqual(outputSize(o(null, 300), 600, 900, L), [200, 300]);
    assert.deepEqual(outputSize(o(4096, null), 1000, 4000, L), [4096, 3072]);
    assert.deepEqual(outputSize(o(1, null), 4000, 10, L), [1, 1]);
  });
});

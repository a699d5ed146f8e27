import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { DiskCache, MemoryLru, type Rendered } from './cache.ts';

const entry = (body: string, status: Rendered['status'] = 'ok'): Rendered => ({
  status,
  description: '(2 participants)',
  errors: status === 'error' ? [{ line: 2, message: 'Syntax Error?' }] : [],
  body: Buffer.from(body),
});
const key = (i: number) => i.toString(16).padStart(64, '0');

describe('render cache', () => {
  it('evicts the least recently used entries past its byte budget', () => {
    const lru = new MemoryLru(4 * 1024);
    lru.set('a', entry('x'.repeat(700)));
    lru.set('b', entry('x'.repeat(700)));
    lru.get('a'); // a is now more recent than b
    for (let i = 0; i < 3; i++) lru.set(`c${i}`, entry('x'.repeat(700)));
    assert.ok(lru.get('a'));
    assert.equal(lru.get('b'), undefined);
  });

  it('does not let one oversized result flush the memory cache', () => {
    const lru = new MemoryLru(4 * 1024);
    lru.set('small', entry('x'));
    lru.set('huge', entry('x'.repeat(3000)));
    assert.equal(lru.get('huge'), undefined);
    assert.ok(lru.get('small'));
  });

  it('keeps results on disk across instances, error results included', async () => {
    const dir = tempDir();
    await new DiskCache(dir, 1024 * 1024).set(key(1), entry('<svg/>'));
    await new DiskCache(dir, 1024 * 1024).set(key(2), entry('ERR', 'error'));
    const again = new DiskCache(dir, 1024 * 1024);
    const ok = await again.get(key(1));
    assert.equal(ok?.body.toString(), '<svg/>');
    assert.equal(ok?.description, '(2 participants)');
    const err = await again.get(key(2));
    assert.equal(err?.status, 'error');
    assert.deepEqual(err?.errors, [{ line: 2, message: 'Syntax Error?' }]);
    assert.equal(await again.get(key(3)), undefined);
  });

  it('treats a torn or foreign file as a miss', async () => {
    const dir = tempDir();
    const cache = new DiskCache(dir, 1024 * 1024);
    await cache.set(key(4), entry('ok'));
    writeFileSync(join(dir, key(4).slice(0, 2), key(4)), Buffer.from([0, 0, 0, 9, 1, 2]));
    assert.equal(await cache.get(key(4)), undefined);
  });

  it('prunes the oldest files when the directory passes its cap', async () => {
    const dir = tempDir();
    const cache = new DiskCache(dir, 10 * 1024);
    for (let i = 0; i < 30; i++) await cache.set(key(i), entry('x'.repeat(1000)));
    const files = readdirSync(dir).flatMap((d) => readdirSync(join(dir, d)));
    assert.ok(files.length <= 10, `${files.length} files left`);
    assert.ok(await cache.get(key(29)), 'the newest survives');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { tempDir } from '../../../test/helpers/server.ts';
import { fromHit, type Rendered, renderCache, store } from './cache.ts';

const entry = (body: string, status: Rendered['status'] = 'ok'): Rendered => ({
  status,
  description: '(2 participants)',
  errors: status === 'error' ? [{ line: 2, message: 'Syntax Error?' }] : [],
  body: Buffer.from(body),
});
const key = (i: number) => i.toString(16).padStart(64, '0');
const log = pino({ level: 'silent' });

describe('render cache', { timeout: 60_000 }, () => {
  it('keeps results on disk across instances, error results included', async () => {
    const dataDir = tempDir();
    const sizes = { cacheMemory: 1024 * 1024, cacheDisk: 1024 * 1024 };
    const first = renderCache(dataDir, sizes, log);
    await store(first, key(1), entry('<svg/>'));
    await store(first, key(2), entry('ERR', 'error'));
    const again = renderCache(dataDir, sizes, log);
    const ok = await again.get(key(1));
    assert.equal(ok?.tier, 'disk');
    assert.deepEqual(fromHit(ok!), entry('<svg/>'));
    const err = await again.get(key(2));
    assert.deepEqual(fromHit(err!), entry('ERR', 'error'));
    assert.equal(await again.get(key(3)), undefined);
  });

  it('keeps nothing on disk with a zero disk budget, and nothing in memory with a zero memory budget', async () => {
    const dataDir = tempDir();
    const memOnly = renderCache(dataDir, { cacheMemory: 1024 * 1024, cacheDisk: 0 }, log);
    await store(memOnly, key(1), entry('<svg/>'));
    assert.equal((await memOnly.get(key(1)))?.tier, 'memory');
    assert.equal(await renderCache(dataDir, { cacheMemory: 0, cacheDisk: 1024 }, log).get(key(1)), undefined);
    const diskOnly = renderCache(dataDir, { cacheMemory: 0, cacheDisk: 1024 * 1024 }, log);
    await store(diskOnly, key(2), entry('<svg/>'));
    assert.equal((await diskOnly.get(key(2)))?.tier, 'disk');
  });
});

import assert from 'node:assert/strict';
import { readdir, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { DiskCache, MemoryLru, prune } from './cache.ts';

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of await readdir(dir).catch(() => [])) {
    for (const f of await readdir(join(dir, sub))) out.push(join(dir, sub, f));
  }
  return out;
}

describe('avatar caches', () => {
  it('evicts the least recently used entries past the byte budget', () => {
    const lru = new MemoryLru(90);
    lru.set('a', Buffer.alloc(20));
    lru.set('b', Buffer.alloc(20));
    lru.set('c', Buffer.alloc(20));
    assert.ok(lru.get('a')); // a is now the most recent
    lru.set('d', Buffer.alloc(20));
    lru.set('e', Buffer.alloc(20));
    assert.equal(lru.get('b'), undefined, 'b was the oldest');
    assert.ok(lru.get('a') && lru.get('e'));
    assert.ok(lru.bytes <= 90);
    lru.set('huge', Buffer.alloc(60));
    assert.equal(lru.get('huge'), undefined, 'an entry over a quarter of the budget is not kept');
  });

  it('writes atomically to disk and reads back', async () => {
    const dir = tempDir();
    const disk = new DiskCache(dir, 1024 * 1024, (err) => assert.fail(String(err)));
    await disk.set('k1', Buffer.from('hello'));
    assert.deepEqual(await disk.get('k1'), Buffer.from('hello'));
    assert.equal(await disk.get('missing'), null);
    const all = await files(dir);
    assert.equal(all.length, 1);
    assert.ok(!all[0]!.endsWith('.tmp'));
  });

  it('prunes the oldest files down to 90% of the budget', async () => {
    const dir = tempDir();
    const disk = new DiskCache(dir, 10_000_000, () => {});
    for (let i = 0; i < 10; i++) {
      await disk.set(`key${i}`, Buffer.alloc(1000, i));
      // Distinct, increasing modification times: key0 is the oldest.
      await utimes(disk.pathOf(`key${i}`), new Date(1e12 + i * 1000), new Date(1e12 + i * 1000));
    }
    await prune(dir, 5000);
    const left = await files(dir);
    let total = 0;
    for (const f of left) total += (await stat(f)).size;
    assert.ok(total <= 4500, `total ${total}`);
    assert.equal(await disk.get('key0'), null, 'the oldest went first');
    assert.ok(await disk.get('key9'), 'the newest stays');
  });

  it('serves rendered avatars from the disk cache after a restart', async () => {
    const dataDir = tempDir();
    const url = '/avatar/0bc83cb571cd1c50ba6f3e8a78ef1346?d=monsterid&s=120';
    const first = await buildTestServer({ overrides: { server: { dataDir }, avatar: { upstream: 'none' } } });
    const a = await first.inject({ url });
    await first.close();
    const second = await buildTestServer({
      overrides: { server: { dataDir }, avatar: { upstream: 'none' } },
    });
    try {
      const b = await second.inject({ url });
      assert.ok(b.rawPayload.equals(a.rawPayload));
      const metrics = await second.inject({ url: '/metrics' });
      assert.match(metrics.body, /devutil_avatar_cache_total\{layer="disk"\} 1/);
      assert.doesNotMatch(metrics.body, /devutil_avatar_cache_total\{layer="render"\}/);
    } finally {
      await second.close();
    }
  });
});

// The disk tier's layout: each body alone in an immutable file a front proxy can send, a record
// beside it, new names for new versions, old bodies removed (after a grace when offloaded),
// orphans swept by the scan, and the single-file format of earlier versions cleared on upgrade.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';
import { Cache, type CacheOptions } from './cache.ts';

type Meta = { i: number };
const open = (dir: string, o: Partial<CacheOptions> = {}) =>
  new Cache<Meta>({ name: 'test', dir, diskBytes: 1024 * 1024, memoryBytes: 0, ...o });
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const shardFiles = (dir: string, key: string) => {
  const h = hashOf(key);
  const shard = join(dir, h.slice(0, 2));
  return existsSync(shard) ? readdirSync(shard).filter((n) => n.startsWith(h)) : [];
};

describe('Cache disk layout', () => {
  it('keeps each body alone in a file named by key and version, with its record beside it', async () => {
    const dir = tempDir();
    const c = open(dir);
    const body = Buffer.from('exactly these bytes and nothing else');
    await c.put('k', body, { i: 1 });
    const e = (await c.peek('k'))!;
    const file = c.bodyFile(e);
    const h = hashOf('k');
    assert.match(file ?? '', new RegExp(`^${h.slice(0, 2)}/${h}\\.[0-9a-f]{16}$`));
    assert.deepEqual(readFileSync(join(dir, file!)), body, 'the body file is the body, no trailer');
    const record = JSON.parse(readFileSync(join(dir, h.slice(0, 2), `${h}.meta`), 'utf8'));
    assert.equal(record.k, 'k');
    assert.deepEqual(record.m, { i: 1 });
    assert.deepEqual(shardFiles(dir, 'k').sort(), [`${h}.meta`, file!.split('/')[1]].sort());
  });

  it('gives a replacement a new body file and removes the old one, while a reader of the old one finishes it', async () => {
    const dir = tempDir();
    const c = open(dir);
    const v1 = Buffer.alloc(200_000, 1);
    await c.put('k', v1, { i: 1 });
    const e1 = (await c.peek('k'))!;
    const f1 = c.bodyFile(e1)!;
    const reading = await c.stream(e1);
    assert.ok(reading);
    await c.put('k', Buffer.alloc(1000, 2), { i: 2 });
    const e2 = (await c.peek('k'))!;
    const f2 = c.bodyFile(e2)!;
    assert.notEqual(f2, f1);
    assert.equal(c.bodyFile(e1), undefined, 'the old version has no body file any more');
    assert.equal(existsSync(join(dir, f1)), false, 'removed at once without retiredBodyMs');
    assert.deepEqual(readFileSync(join(dir, f2)), Buffer.alloc(1000, 2));
    assert.deepEqual(await buffer(reading), v1, 'an open body file reads the old version whole');
    assert.equal(shardFiles(dir, 'k').length, 2);
  });

  it('with retiredBodyMs keeps a replaced or evicted body under its name for a while, then removes it', async () => {
    const dir = tempDir();
    const c = open(dir, { retiredBodyMs: 300, diskBytes: 3300, diskItemBytes: 3300 });
    await c.put('k', Buffer.alloc(1000, 1), { i: 1 });
    const f1 = c.bodyFile((await c.peek('k'))!)!;
    await c.put('k', Buffer.alloc(1000, 2), { i: 2 });
    assert.deepEqual(readFileSync(join(dir, f1)), Buffer.alloc(1000, 1), 'still there for a front proxy');
    await c.put('x', Buffer.alloc(1000, 3), { i: 3 });
    const fx = c.bodyFile((await c.peek('x'))!)!;
    await c.put('y', Buffer.alloc(1000, 4), { i: 4 });
    await c.put('z', Buffer.alloc(1000, 5), { i: 5 }); // evicts k (least recently used)
    assert.equal(await c.peek('k'), undefined);
    await c.rescan(); // a scan does not sweep bodies it is keeping for a while
    assert.ok(existsSync(join(dir, f1)));
    await waitFor(() => !existsSync(join(dir, f1)), 'the replaced body is removed after the grace');
    // The evicted body was retired later (when z went in), so its grace ends a little later.
    await waitFor(() => shardFiles(dir, 'k').length === 0, 'the evicted body goes too, after its own grace');
    assert.ok(existsSync(join(dir, fx)), 'a live body stays');
  });

  it('touch rewrites the record only: the body file keeps its name and bytes', async () => {
    const dir = tempDir();
    const c = open(dir);
    await c.put('k', Buffer.from('body'), { i: 1 }, { ttlMs: 1000 });
    const before = (await c.peek('k'))!;
    const file = c.bodyFile(before)!;
    const ino = statSync(join(dir, file)).ino;
    assert.equal(await c.touch('k', { ttlMs: 3_600_000 }), true);
    const after = (await c.peek('k'))!;
    assert.equal(c.bodyFile(after), file);
    assert.equal(statSync(join(dir, file)).ino, ino);
    const again = open(dir);
    assert.ok((await again.peek('k'))!.expiresAt! > before.expiresAt! + 3_000_000, 'the new TTL is on disk');
  });

  it('a scan removes bodies no record names once they are old, and leaves fresh ones (a sibling mid-publish)', async () => {
    const dir = tempDir();
    const c = open(dir);
    await c.put('k', Buffer.alloc(100, 1), { i: 1 });
    await c.idle();
    const h = hashOf('k');
    const g = hashOf('gone');
    const oldOrphan = join(dir, h.slice(0, 2), `${h}.00000000000000aa`);
    const freshOrphan = join(dir, h.slice(0, 2), `${h}.00000000000000bb`);
    mkdirSync(join(dir, g.slice(0, 2)), { recursive: true });
    const noRecord = join(dir, g.slice(0, 2), `${g}.00000000000000cc`);
    for (const p of [oldOrphan, freshOrphan, noRecord]) writeFileSync(p, 'orphan');
    const past = Date.now() / 1000 - 3600;
    for (const p of [oldOrphan, noRecord, join(dir, c.bodyFile((await c.peek('k'))!)!)])
      utimesSync(p, past, past);
    const d = open(dir);
    await d.ready;
    assert.equal(existsSync(oldOrphan), false);
    assert.equal(existsSync(noRecord), false);
    assert.ok(existsSync(freshOrphan));
    assert.deepEqual((await d.get('k'))?.body, Buffer.alloc(100, 1), 'the live body, old as it is, stays');
    assert.equal(d.stats().entries, 1);
  });

  it('clears entries of the earlier single-file format (body + trailer) once, as misses', async () => {
    const dir = tempDir();
    const h = hashOf('k');
    mkdirSync(join(dir, h.slice(0, 2)), { recursive: true });
    // What versions before the body-file layout wrote: body, JSON trailer, u32 length, "DVC1".
    const json = Buffer.from(JSON.stringify({ k: 'k', n: 4, s: 1, c: 1, e: null, m: { i: 1 } }));
    const tail = Buffer.alloc(8);
    tail.writeUInt32BE(json.length, 0);
    tail.write('DVC1', 4);
    const legacy = join(dir, h.slice(0, 2), h);
    writeFileSync(legacy, Buffer.concat([Buffer.from('body'), json, tail]));
    const c = open(dir);
    assert.equal(await c.get('k'), undefined);
    await c.ready;
    assert.equal(existsSync(legacy), false);
    assert.equal(c.stats().bytes, 0);
    await c.put('k', Buffer.from('new'), { i: 2 });
    assert.equal((await open(dir).get('k'))?.body.toString(), 'new');
  });
});

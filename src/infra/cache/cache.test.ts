import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'node:test';
import { killMidWrite } from '../../../test/helpers/kill-writer.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { Cache, type CacheOptions } from './cache.ts';

type Meta = { i: number };
const open = (dir: string, o: Partial<CacheOptions> = {}) =>
  new Cache<Meta>({ name: 'test', dir, diskBytes: 1024 * 1024, memoryBytes: 0, ...o });

/** Entry files on disk (bodies and records, not temporaries), with their sizes. */
function files(dir: string): { name: string; size: number }[] {
  return readdirSync(dir)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => readdirSync(join(dir, d)).map((n) => join(dir, d, n)))
    .map((p) => ({ name: p, size: statSync(p).size }));
}

/** The entries' records on disk. */
const records = (dir: string) => files(dir).filter((f) => f.name.endsWith('.meta'));
/** The record of `key`. */
const fileOf = (dir: string, key: string) =>
  records(dir).find((f) => readFileSync(f.name).includes(Buffer.from(JSON.stringify(key))));

describe('Cache', () => {
  it('answers from memory, then from disk once memory has let the entry go', async () => {
    const c = open(tempDir(), { memoryBytes: 3000, memoryItemBytes: 2000 });
    await c.put('a', Buffer.alloc(1500, 1), { i: 1 });
    assert.equal((await c.get('a'))?.tier, 'memory');
    await c.put('b', Buffer.alloc(1500, 2), { i: 2 }); // a leaves the memory tier
    const a = await c.get('a');
    assert.equal(a?.tier, 'disk');
    assert.deepEqual(a?.body, Buffer.alloc(1500, 1));
    assert.deepEqual(a?.entry.meta, { i: 1 });
    assert.equal((await c.get('a'))?.tier, 'memory', 'a disk hit is copied into memory');
  });

  it('keeps a put with disk: false in memory only, and a later put writes it to disk', async () => {
    const dir = tempDir();
    const c = open(dir, { memoryBytes: 3000 });
    assert.equal(await c.put('a', Buffer.alloc(400, 1), { i: 1 }, { disk: false }), false);
    assert.equal((await c.get('a'))?.tier, 'memory');
    assert.equal(records(dir).length, 0);
    assert.equal(await open(dir).get('a'), undefined);
    assert.equal(await c.put('a', Buffer.alloc(400, 1), { i: 1 }), true);
    assert.equal((await open(dir).get('a'))?.tier, 'disk');
  });

  it('evicts the least recently used disk entry first, not the oldest written', async () => {
    const dir = tempDir();
    // Each entry is 1000 body bytes plus a record under 100 bytes: three fit in 3300.
    const c = open(dir, { diskBytes: 3300, diskItemBytes: 3300 });
    for (const [i, k] of ['a', 'b', 'c'].entries()) await c.put(k, Buffer.alloc(1000, i), { i });
    assert.ok(await c.get('a')); // a is now the most recently used
    await c.put('d', Buffer.alloc(1000, 3), { i: 3 });
    assert.equal(await c.get('b'), undefined, 'b was the least recently used');
    for (const k of ['a', 'c', 'd']) assert.ok(await c.get(k), k);
    assert.equal(records(dir).length, 3);
    assert.equal(files(dir).length, 6, 'the evicted body went with its record');
  });

  it('keeps both tiers within their byte budgets and refuses entries over the item cap', async () => {
    const dir = tempDir();
    const c = open(dir, { diskBytes: 20_000, memoryBytes: 8000 });
    for (let i = 0; i < 60; i++) await c.put(`k${i}`, Buffer.alloc(200 + ((i * 397) % 3000), i), { i });
    await c.idle();
    const onDisk = files(dir).reduce((n, f) => n + f.size, 0);
    const s = c.stats();
    assert.equal(s.bytes, onDisk, 'the index counts what is on disk');
    assert.ok(onDisk <= 20_000, `disk holds ${onDisk}`);
    assert.ok(s.memoryBytes <= 8000, `memory holds ${s.memoryBytes}`);
    assert.ok(s.evictions > 0);
    assert.equal(await c.put('huge', Buffer.alloc(6000), { i: -1 }), false, 'over a quarter of the budget');
    assert.equal(fileOf(dir, 'huge'), undefined);
  });

  it('serves entries written before a restart, even before its directory scan ends', async () => {
    const dir = tempDir();
    const first = open(dir, { diskBytes: 3300, diskItemBytes: 3300 });
    await first.put('old', Buffer.alloc(1000, 1), { i: 1 }, { ttlMs: 60_000 });
    await first.put('new', Buffer.alloc(1000, 2), { i: 2 });
    // Recency after a restart is the files' modification order: old was written first.
    const t = Date.now() / 1000;
    utimesSync(fileOf(dir, 'old')!.name, t - 60, t - 60);
    utimesSync(fileOf(dir, 'new')!.name, t - 30, t - 30);

    const second = open(dir, { diskBytes: 3300, diskItemBytes: 3300 });
    const hit = await second.get('new'); // the scan has not run yet
    assert.equal(hit?.tier, 'disk');
    assert.deepEqual(hit?.body, Buffer.alloc(1000, 2));
    await second.ready;
    assert.equal(second.stats().entries, 2);
    const old = await second.peek('old');
    assert.deepEqual(old?.meta, { i: 1 });
    assert.ok(old?.expiresAt && old.expiresAt > Date.now(), 'the TTL survives the restart');

    const third = open(dir, { diskBytes: 3300, diskItemBytes: 3300 });
    await third.ready;
    await third.put('x', Buffer.alloc(1000, 3), { i: 3 });
    await third.put('y', Buffer.alloc(1000, 4), { i: 4 });
    assert.equal(await third.get('old'), undefined, 'the oldest file went first');
    assert.ok(await third.get('new'));
  });

  it('after kill -9 of a writer mid-write shows the previous entry whole and removes the temporary file', async () => {
    const dir = tempDir();
    const mod = new URL('./cache.ts', import.meta.url).pathname;
    // A real process that stores v1, then streams 1.5 MiB of v2 and stalls before the end.
    const code = `
      import { Readable } from 'node:stream';
      import { Cache } from ${JSON.stringify(mod)};
      const c = new Cache({ name: 'crash', dir: ${JSON.stringify(dir)}, diskBytes: 64 << 20, memoryBytes: 0 });
      await c.put('k', Buffer.alloc(1000, 1), { v: 1 });
      let n = 0;
      new Readable({ read() { if (n++ < 24) this.push(Buffer.alloc(65536, 2)); } }).pipe(c.writer('k', { v: 2 }));
      setInterval(() => {}, 1000);
    `;
    const tmp = join(dir, 'tmp');
    await killMidWrite(code, tmp, 1024 * 1024);
    const again = open(dir, { diskBytes: 64 << 20 });
    const hit = await again.get('k');
    assert.deepEqual(hit?.entry.meta, { v: 1 });
    assert.deepEqual(hit?.body, Buffer.alloc(1000, 1));
    await again.ready;
    assert.deepEqual(readdirSync(tmp), [], 'the dead writer left nothing behind');
    assert.equal(files(dir).length, 2, 'v1: one body and its record');
  });

  it('under concurrent puts and reads of one key returns only whole versions, and the last put wins', async () => {
    const c = open(tempDir(), { diskBytes: 8 << 20 });
    const size = (i: number) => 10_000 + i * 7919;
    const whole = (body: Buffer, i: number) => body.length === size(i) && body.every((b) => b === i);
    await c.put('k', Buffer.alloc(size(0), 0), { i: 0 });
    const writes: Promise<boolean>[] = [];
    const reads: Promise<void>[] = [];
    for (let i = 1; i < 20; i++) {
      writes.push(c.put('k', Buffer.alloc(size(i), i), { i }));
      reads.push(
        (async () => {
          for (let t = 0; t < i; t++) await new Promise((r) => setImmediate(r));
          // The name is replaced by rename: a reader finds one version or another, never none.
          const hit = await c.get('k');
          assert.ok(hit, 'a read during replacement found no entry');
          assert.ok(whole(hit.body, hit.entry.meta.i), `get saw a mixed version ${hit.entry.meta.i}`);
          const e = await c.peek('k');
          const s = e && (await c.stream(e));
          if (e && s) assert.ok(whole(await buffer(s), e.meta.i), `stream saw a mixed version ${e.meta.i}`);
        })(),
      );
    }
    await Promise.all(reads);
    const stored = await Promise.all(writes);
    assert.equal(stored.at(-1), true);
    await c.idle();
    const last = await c.get('k');
    assert.equal(last?.entry.meta.i, 19);
    assert.ok(last && whole(last.body, 19));
    assert.equal(c.stats().entries, 1);
    // An entry looked up before a replacement reads nothing rather than the newer bytes.
    const seen = (await c.peek('k'))!;
    await c.put('k', Buffer.alloc(size(5), 5), { i: 5 });
    assert.equal(await c.stream(seen), undefined);
    assert.equal(await c.body(seen), undefined);
  });

  it('a delete cancels a write still in progress', async () => {
    const dir = tempDir();
    const c = open(dir);
    const put = c.put('k', Buffer.alloc(5000, 1), { i: 1 });
    c.delete('k');
    assert.equal(await put, false);
    await c.idle();
    assert.equal(await c.get('k'), undefined);
    assert.deepEqual(files(dir), []);
  });

  it('streams a body to disk as it flows, checking the announced size and the item cap', async () => {
    const dir = tempDir();
    const c = open(dir, { diskBytes: 4 << 20 });
    const chunks = (n: number) => Readable.from(Array.from({ length: n }, (_, i) => Buffer.alloc(65536, i)));
    // The tee the proxy does: the client copy completes whatever happens to the cache copy.
    const tee = async (n: number, w: ReturnType<typeof c.writer>) => {
      const client = new PassThrough();
      const got = buffer(client);
      const src = chunks(n);
      src.pipe(w);
      src.pipe(client);
      return { client: (await got).length, stored: await w.done };
    };
    assert.deepEqual(await tee(4, c.writer('short', { i: 0 }, { expectedSize: 5 * 65536 })), {
      client: 4 * 65536,
      stored: false,
    });
    assert.deepEqual(await tee(20, c.writer('big', { i: 0 })), { client: 20 * 65536, stored: false });
    const ok = c.writer('ok', { i: 7 }, { expectedSize: 8 * 65536 });
    await pipeline(chunks(8), ok);
    assert.equal(await ok.done, true);
    await c.idle();
    assert.deepEqual(
      records(dir).map((f) => f.name),
      [fileOf(dir, 'ok')!.name],
    );
    assert.equal(files(dir).length, 2);
    const e = await c.peek('ok');
    assert.equal(e?.size, 8 * 65536);
    const part = await buffer((await c.stream(e!, 65536 * 3 - 2, 65536 * 3 + 1))!);
    assert.deepEqual(part, Buffer.from([2, 2, 3, 3]));
  });

  it('touch marks an entry confirmed and gives it a new TTL, on disk too', async () => {
    const dir = tempDir();
    const c = open(dir);
    await c.put('k', Buffer.from('body'), { i: 1 }, { ttlMs: 1000 });
    const before = (await c.peek('k'))!;
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(await c.touch('k', { ttlMs: 3_600_000 }), true);
    const after = (await open(dir).peek('k'))!;
    assert.ok(after.checkedAt > before.checkedAt);
    assert.ok(after.expiresAt! > before.expiresAt! + 3_000_000);
    assert.equal(after.storedAt, before.storedAt);
    assert.equal((await open(dir).get('k'))?.body.toString(), 'body');
    assert.equal(await c.touch('missing'), false);
  });

  it('counts hits and misses per tier for metrics', async () => {
    const c = open(tempDir(), { memoryBytes: 10_000 });
    await c.get('k');
    await c.put('k', Buffer.from('v'), { i: 1 }, { memory: false });
    await c.get('k');
    await c.get('k');
    assert.deepEqual(
      { ...c.stats(), bytes: 0 },
      {
        name: 'test',
        entries: 1,
        bytes: 0,
        memoryEntries: 1,
        memoryBytes: 257,
        hits: 2,
        misses: 1,
        memoryHits: 1,
        diskHits: 1,
        writes: 1,
        evictions: 0,
      },
    );
  });

  it('holds() says whether memory keeps that very body, counting a memory hit only when it does', async () => {
    const c = open(tempDir(), { memoryBytes: 10_000 });
    await c.put('k', Buffer.from('v1'), { i: 1 });
    const body = c.memory('k')?.body;
    assert.ok(body);
    assert.equal(c.holds('k', body), true);
    assert.equal(c.holds('k', Buffer.from('v1')), false, 'the same bytes in another Buffer are not held');
    assert.equal(c.holds('other', body), false);
    await c.put('k', Buffer.from('v2'), { i: 2 });
    assert.equal(c.holds('k', body), false, 'a replaced body is no longer held');
    const s = c.stats();
    assert.deepEqual([s.hits, s.memoryHits, s.misses], [2, 2, 0]);
  });

  it('on rescan adopts what a sibling process wrote and forgets what it removed', async () => {
    const dir = tempDir();
    const a = open(dir);
    const b = open(dir);
    await Promise.all([a.ready, b.ready]);
    await b.put('k', Buffer.from('from b'), { i: 2 });
    assert.equal(await a.get('k'), undefined);
    await a.rescan();
    assert.equal((await a.get('k'))?.body.toString(), 'from b');
    b.delete('k');
    await b.idle();
    await a.rescan();
    assert.equal(a.stats().entries, 0);
  });

  it('treats a torn, foreign or other-key record or a cut body as a miss and removes it; clears older formats', async () => {
    const dir = tempDir();
    const c = open(dir);
    await c.put('a', Buffer.from('aaaa'), { i: 1 });
    await c.put('b', Buffer.from('bbbb'), { i: 2 });
    await c.put('c', Buffer.from('cccc'), { i: 3 });
    const fa = fileOf(dir, 'a')!.name;
    const fb = fileOf(dir, 'b')!.name;
    writeFileSync(fa, readFileSync(fb)); // a's name now holds b's record
    const torn = readFileSync(fb);
    writeFileSync(fb, torn.subarray(0, torn.length - 3));
    const bodyC = join(dir, c.bodyFile((await c.peek('c'))!)!);
    writeFileSync(bodyC, 'cc'); // a body cut short under a running cache
    assert.equal(await c.get('c'), undefined);
    // Records are read when an entry is first used after a start.
    const again = open(dir);
    await again.ready;
    assert.equal(await again.get('a'), undefined);
    assert.equal(await again.get('b'), undefined);
    assert.deepEqual(files(dir), []);
    mkdirSync(join(dir, 'ab'), { recursive: true });
    writeFileSync(join(dir, 'ab', 'abcdef.json'), '{}');
    await again.rescan();
    assert.deepEqual(files(dir), []);
  });

  it('works memory-only without a directory, and is off with zero budgets', async () => {
    const m = new Cache<null>({ name: 'm', dir: null, diskBytes: 1 << 20, memoryBytes: 10_000 });
    await m.put('k', Buffer.from('v'), null);
    assert.equal((await m.get('k'))?.tier, 'memory');
    const off = new Cache<null>({ name: 'off', dir: tempDir(), diskBytes: 0, memoryBytes: 0 });
    assert.equal(await off.put('k', Buffer.from('v'), null), false);
    assert.equal(await off.get('k'), undefined);
  });
});

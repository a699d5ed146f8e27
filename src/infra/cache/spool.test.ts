// The spool: many readers follow one body as it is written, the last byte waits for the seal, a
// failed body ends no reader, and a sealed file handed to the cache keeps its open readers going; a
// reader that keeps up gets the appended chunks themselves, one that is behind reads the file.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';
import { Cache } from './cache.ts';
import { Spool } from './spool.ts';

/** Everything the reader has sent so far, and whether it ended or failed. */
function collect(r: Readable) {
  const got = { chunks: [] as Buffer[], ended: false, error: null as Error | null };
  r.on('data', (c: Buffer) => got.chunks.push(c));
  r.on('end', () => {
    got.ended = true;
  });
  r.on('error', (e) => {
    got.error = e;
  });
  return {
    got,
    bytes: () => Buffer.concat(got.chunks),
    settled: () =>
      new Promise<void>((res) => {
        if (got.ended || got.error) res();
        r.once('end', () => res());
        r.once('error', () => res());
      }),
  };
}

const tick = () => new Promise((r) => setTimeout(r, 30));

describe('Spool', { timeout: 30_000 }, () => {
  it('streams to every reader as it is written, holding the last byte until the seal', async () => {
    const s = await Spool.create(join(tempDir(), 'a'));
    const a = collect(s.reader(0));
    await s.append(Buffer.from('hello '));
    const b = collect(s.reader(0)); // joins after the first chunk
    await s.append(Buffer.from('world'));
    await waitFor(() => a.bytes().length >= 10 && b.bytes().length >= 10, 'both readers to get ten bytes');
    await tick();
    assert.equal(a.bytes().toString(), 'hello worl', 'all but the last byte before the seal');
    assert.equal(b.bytes().toString(), 'hello worl');
    assert.equal(a.got.ended, false);
    await s.drain();
    s.seal();
    await Promise.all([a.settled(), b.settled()]);
    assert.equal(a.bytes().toString(), 'hello world');
    assert.equal(b.bytes().toString(), 'hello world');
    assert.ok(a.got.ended && b.got.ended);
    s.done();
  });

  it('serves a range as soon as its bytes are there, and a range that ends the body only after the seal', async () => {
    const s = await Spool.create(join(tempDir(), 'b'));
    const mid = collect(s.reader(2, 4));
    const tail = collect(s.reader(6));
    await s.append(Buffer.from('0123456789'));
    await mid.settled();
    assert.equal(mid.bytes().toString(), '234');
    await waitFor(() => tail.bytes().length >= 3, 'the tail reader to get three bytes');
    await tick();
    assert.equal(tail.bytes().toString(), '678');
    assert.equal(tail.got.ended, false);
    await s.drain();
    s.seal();
    await tail.settled();
    assert.equal(tail.bytes().toString(), '6789');
    s.done();
  });

  it('fails every reader of a body that fails, none of them ever getting its end', async () => {
    const s = await Spool.create(join(tempDir(), 'c'));
    const a = collect(s.reader(0));
    await s.append(Buffer.from('partial body'));
    await waitFor(() => a.bytes().length >= 11, 'the reader to get eleven bytes');
    s.fail(new Error('digest mismatch'));
    await a.settled();
    assert.equal(a.got.ended, false);
    assert.match(String(a.got.error), /digest mismatch/);
    assert.ok(a.bytes().length < 'partial body'.length);
    await assert.rejects(s.append(Buffer.from('x')));
    await s.remove();
    assert.equal(existsSync(s.path), false);
  });

  it('hands its sealed file to the cache while a reader is still reading it', async () => {
    const cache = new Cache<{ t: string }>({ name: 't', dir: tempDir(), diskBytes: 8 << 20, memoryBytes: 0 });
    const file = await cache.tempFile();
    assert.ok(file);
    const s = await Spool.create(file);
    const body = Buffer.alloc(600_000, 7);
    await s.append(body);
    const slow = s.reader(0);
    await s.drain();
    s.seal();
    assert.equal(await cache.adopt('k', s.path, s.written, { t: 'x' }), true);
    s.done();
    const c = collect(slow);
    await c.settled();
    assert.ok(c.bytes().equals(body), 'the open reader reads the whole body after the rename');
    const hit = await cache.get('k');
    assert.ok(hit?.body.equals(body));
    assert.equal(hit?.entry.meta.t, 'x');
  });

  it('keeps many quick appends whole and in order, holding a fast writer back past its high-water mark', async () => {
    const s = await Spool.create(join(tempDir(), 'd'));
    const r = collect(s.reader(0));
    const chunks = Array.from({ length: 3000 }, (_, i) => Buffer.alloc(2048, i % 251));
    let waited = 0;
    for (const c of chunks) {
      const p = s.append(c);
      let settled = false;
      void p.then(() => {
        settled = true;
      });
      await Promise.resolve();
      if (!settled) waited++;
      await p;
    }
    assert.ok(waited > 0, 'the writer was held back at least once');
    await s.drain();
    assert.equal(s.written, 3000 * 2048);
    s.seal();
    await r.settled();
    assert.ok(r.bytes().equals(Buffer.concat(chunks)));
    s.done();
  });

  it('hands a reader that keeps up the appended chunks themselves, and one far behind the file', async () => {
    const s = await Spool.create(join(tempDir(), 'e'));
    const live = collect(s.reader(0));
    const first = Buffer.alloc(100_000, 1);
    await s.append(first);
    await waitFor(() => live.bytes().length >= first.length - 1, 'the live reader to get the first chunk');
    assert.equal(live.got.chunks[0]?.buffer, first.buffer, 'the same memory, not a copy read back');
    const chunks = [first, ...Array.from({ length: 60 }, (_, i) => Buffer.alloc(64 * 1024, i % 251))];
    for (const c of chunks.slice(1)) await s.append(c);
    await s.drain();
    // Joins once the first megabytes left memory: reads them from the file, the rest as it can.
    const late = collect(s.reader(0));
    await waitFor(() => late.bytes().length >= 1000, 'the late reader to start');
    assert.equal(late.got.ended, false, 'no end before the seal');
    s.seal();
    await Promise.all([live.settled(), late.settled()]);
    const body = Buffer.concat(chunks);
    assert.ok(live.bytes().equals(body));
    assert.ok(late.bytes().equals(body));
    s.done();
  });

  it('holds the writer back to a reader that keeps up, and lets a stalled reader go', async () => {
    const s = await Spool.create(join(tempDir(), 'f'));
    const r = s.reader(0);
    const got: Buffer[] = [];
    r.on('data', (c: Buffer) => got.push(c));
    const chunk = (i: number) => Buffer.alloc(64 * 1024, i % 251);
    await s.append(chunk(0));
    await waitFor(() => got.length > 0, 'the reader to start');
    r.pause();
    // Far below the file's high-water mark: only the paused reader can hold the writer back.
    let waited = 0;
    const chunks = [chunk(0)];
    for (let i = 1; i < 48; i++) {
      chunks.push(chunk(i));
      const p = s.append(chunks[i] as Buffer);
      let settled = false;
      void p.then(() => {
        settled = true;
      });
      await new Promise((res) => setImmediate(res));
      if (!settled) waited++;
      await p; // the stalled reader is let go: the writer goes on
    }
    assert.ok(waited > 0, 'the writer waited for its reader');
    await s.drain();
    s.seal();
    const ended = new Promise((res) => r.once('end', res));
    r.resume();
    await ended;
    assert.ok(Buffer.concat(got).equals(Buffer.concat(chunks)));
    s.done();
  });

  it('paces the writer from the start for a reader made while it writes, which then reads from memory', async () => {
    const s = await Spool.create(join(tempDir(), 'h'));
    // Made but not read yet, as the first client's reader is until its answer's headers went out.
    const r = s.reader(0);
    // 2 MiB: past the bytes kept in memory, had the writer not waited.
    const chunks = Array.from({ length: 32 }, (_, i) => Buffer.alloc(64 * 1024, i % 251));
    let appended = 0;
    const writer = (async () => {
      for (const c of chunks) {
        await s.append(c);
        appended++;
      }
    })();
    await tick();
    assert.ok(appended < chunks.length, 'the writer waits for the reader that has not started');
    const got: Buffer[] = [];
    r.on('data', (c: Buffer) => got.push(c));
    await writer;
    await s.drain();
    s.seal();
    await new Promise((res) => r.once('end', res));
    assert.equal(
      got[0]?.buffer,
      chunks[0]?.buffer,
      'the first bytes from memory, not read back from the file',
    );
    assert.ok(Buffer.concat(got).equals(Buffer.concat(chunks)));
    s.done();
  });

  it('writes a small queue to the file without a drain (batched writes wait only briefly)', async () => {
    const s = await Spool.create(join(tempDir(), 'i'));
    await s.append(Buffer.from('a few bytes'));
    await waitFor(() => s.written === 11, 'the queued bytes to reach the file');
    await s.drain();
    s.seal();
    s.done();
  });

  it("with the size stated, holds back only the body's last byte and refuses bytes past it", async () => {
    const s = await Spool.create(join(tempDir(), 'g'), { size: 11 });
    const a = collect(s.reader(0));
    await s.append(Buffer.from('hello '));
    await waitFor(() => a.bytes().length >= 6, 'the reader to get the whole first chunk');
    await s.append(Buffer.from('world'));
    await waitFor(() => a.bytes().length >= 10, 'the reader to get ten bytes');
    await tick();
    assert.equal(a.bytes().toString(), 'hello worl');
    await assert.rejects(s.append(Buffer.from('!')), /past its stated size/);
    await s.drain();
    s.seal();
    await a.settled();
    assert.equal(a.bytes().toString(), 'hello world');
    s.done();
  });
});

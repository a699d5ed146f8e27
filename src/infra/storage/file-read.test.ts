// FileRangeStream: byte-identical ranges through real HTTP responses to slow clients (the pooled
// buffers are reused only after the socket took them), fresh chunks for every other consumer, and
// the file closed however the transfer ends.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { FileRangeStream, READ_CHUNK_BYTES } from './file-read.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const opts = { timeout: 30_000 };

describe('FileRangeStream', () => {
  const data = randomBytes(5 * READ_CHUNK_BYTES + 12_345);
  const path = join(tempDir(), 'blob.bin');
  let server: Server;
  let url = '';
  const streams: FileRangeStream[] = [];

  before(async () => {
    writeFileSync(path, data);
    server = createServer(async (req, res) => {
      const [start, end] = (req.url ?? '').slice(1).split('-').map(Number) as [number, number];
      const s = new FileRangeStream(await open(path, 'r'), start, end);
      streams.push(s);
      res.on('error', () => {}); // a client that resets: what Fastify's own listener does
      s.pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  /** GETs a range, stalling before reading so the server's writes back up in the socket. */
  function fetchRange(start: number, end: number, stallMs: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      get(`${url}/${start}-${end}`, (res: IncomingMessage) => {
        const parts: Buffer[] = [];
        res.pause();
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve(Buffer.concat(parts)));
        res.on('error', reject);
        setTimeout(() => res.resume(), stallMs);
      }).on('error', reject);
    });
  }

  it('sends ranges byte for byte to several slow clients at once', opts, async () => {
    const ranges: [number, number][] = [
      [0, data.length - 1],
      [1, data.length - 2],
      [READ_CHUNK_BYTES - 1, 3 * READ_CHUNK_BYTES],
      [7, 7],
      [data.length - 100, data.length - 1],
      [0, data.length - 1],
    ];
    const got = await Promise.all(ranges.map(([s, e], i) => fetchRange(s, e, 50 + 60 * i)));
    for (const [i, [s, e]] of ranges.entries())
      assert.equal(sha(got[i] as Buffer), sha(data.subarray(s, e + 1)));
  });

  it('gives other consumers chunks of their own (a sink may keep what it was given)', opts, async () => {
    const kept: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        kept.push(chunk);
        setImmediate(cb);
      },
    });
    await pipeline(new FileRangeStream(await open(path, 'r'), 3, data.length - 1), sink);
    assert.equal(sha(Buffer.concat(kept)), sha(data.subarray(3)));
    const chunks: Buffer[] = [];
    for await (const c of new FileRangeStream(await open(path, 'r'), 0, data.length - 1))
      chunks.push(c as Buffer);
    assert.equal(sha(Buffer.concat(chunks)), sha(data));
  });

  it('closes the file when the client goes away mid-transfer', opts, async () => {
    streams.length = 0;
    await new Promise<void>((resolve, reject) => {
      const req = get(`${url}/0-${data.length - 1}`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      }).on('error', () => {});
      req.on('error', reject);
    });
    const s = streams[0] as FileRangeStream;
    if (!s.closed) await new Promise((r) => s.once('close', r));
    assert.equal((s as unknown as { fh: { fd: number } }).fh.fd, -1);
  });

  it('fails, not ends, when the file is shorter than its range', opts, async () => {
    const s = new FileRangeStream(await open(path, 'r'), data.length - 10, data.length + 10);
    await assert.rejects(
      pipeline(s, new Writable({ write: (_c, _e, cb) => cb() })),
      /file ended before its range/,
    );
  });
});

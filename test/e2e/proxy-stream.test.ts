// A 1 GiB download through the proxy keeps memory flat: bodies are streamed with back-pressure,
// never buffered (docs/protocols/reverse-proxy.md §3, §8.8). Memory, not time, is asserted.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ok } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { toolSkip } from '../helpers/tools.ts';

const GIB = 1024 ** 3;
const CHUNK = Buffer.alloc(256 * 1024, 7);

describe('proxy: 1 GiB stream', { skip: toolSkip('curl') }, () => {
  let w: World;
  let upstreamClosedEarly: () => void = () => {};
  before(async () => {
    w = await startWorld({ git: false });
    w.net.on('raw.githubusercontent.com', (_req, res) => {
      res.on('close', () => {
        if (!res.writableFinished) upstreamClosedEarly();
      });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': GIB });
      Readable.from(
        (function* () {
          for (let sent = 0; sent < GIB; sent += CHUNK.length) yield CHUNK;
        })(),
      ).pipe(res);
    });
  });
  after(async () => {
    await w?.close();
  });

  it('relays 1 GiB with RSS growth far below the body size', async () => {
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 50);
    try {
      const r = await ok(
        'curl',
        [
          '-sS',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code} %{size_download}',
          `${w.base}/raw.githubusercontent.com/o/r/main/huge`,
        ],
        {
          timeoutMs: 110_000,
        },
      );
      assert.equal(r.stdout, `200 ${GIB}`);
    } finally {
      clearInterval(timer);
    }
    const growth = peak - baseline;
    assert.ok(
      growth < 200 * 1024 * 1024,
      `RSS grew by ${Math.round(growth / 1048576)} MiB while relaying 1 GiB`,
    );
  });

  it('aborts the upstream transfer when the client goes away', { timeout: 60_000 }, async () => {
    const closed = new Promise<void>((resolve) => {
      upstreamClosedEarly = resolve;
    });
    await new Promise<void>((resolve, reject) => {
      const req = request(`${w.base}/raw.githubusercontent.com/o/r/main/huge`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (err) => (err.message.includes('socket hang up') ? resolve() : reject(err)));
      req.end();
    });
    await closed; // the fixture saw its response cut short: the proxy did not keep downloading
    const r = await ok('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', `${w.base}/robots.txt`]);
    assert.equal(r.stdout, '200');
  });
});

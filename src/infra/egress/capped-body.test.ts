import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { type Dispatcher, request } from 'undici';
import { BodyTooLarge, capStream, discard, readCapped, readSmall } from './capped-body.ts';

/** A stream of `n` chunks of `size` bytes that records how many chunks were pulled. */
function counted(n: number, size: number) {
  const seen = { pulled: 0, destroyed: false };
  const s = new Readable({
    highWaterMark: 1,
    read() {
      if (seen.pulled >= n) return void this.push(null);
      seen.pulled++;
      this.push(Buffer.alloc(size, seen.pulled));
    },
    destroy(err, cb) {
      seen.destroyed = true;
      cb(err);
    },
  });
  return { s, seen };
}

describe('capped body reader', () => {
  it('returns the whole body when it fits, byte for byte', async () => {
    const { s } = counted(4, 100);
    const b = await readCapped(s, 400);
    assert.equal(b.length, 400);
    assert.equal(b[399], 4);
  });

  it('refuses a body past the cap, closes the source and reads no further', async () => {
    const { s, seen } = counted(1000, 100);
    await assert.rejects(
      readCapped(s, 250, { what: 'upstream image' }),
      (e: unknown) => e instanceof BodyTooLarge && e.limit === 250 && /upstream image/.test(e.message),
    );
    assert.ok(seen.destroyed);
    assert.ok(seen.pulled <= 5, `pulled ${seen.pulled} chunks`);
  });

  it('refuses a declared length past the cap before reading a byte', async () => {
    const { s, seen } = counted(10, 10);
    await assert.rejects(readCapped(s, 50, { declared: '1000' }), BodyTooLarge);
    assert.equal(seen.pulled, 0);
    assert.ok(seen.destroyed);
  });

  /**
   * A GET to a server answering `status` with `body` whole; `use` gets the undici response. Fails on
   * any uncaught exception meanwhile: undici emits an error of its own when a body is destroyed
   * unread, and with no listener that is an uncaught exception, the end of the server process.
   */
  async function noUncaught(
    status: number,
    body: Buffer,
    use: (res: Dispatcher.ResponseData) => Promise<void>,
  ) {
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-length': String(body.length) });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const { port } = server.address() as AddressInfo;
      await use(await request(`http://127.0.0.1:${port}/`));
      // undici reports the destroy a tick later (setImmediate).
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(uncaught, []);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
      server.closeAllConnections();
      server.close();
    }
  }

  it('refuses a declared length past the cap of an undici response with no uncaught error', () =>
    noUncaught(200, Buffer.alloc(5000), async (res) => {
      await assert.rejects(
        readCapped(res.body, 1000, { declared: res.headers['content-length'] }),
        BodyTooLarge,
      );
    }));

  it('lets go of an unread undici body with no uncaught error (discard)', () =>
    noUncaught(404, Buffer.from('abc'), async (res) => {
      discard(res.body);
      assert.ok(res.body.destroyed);
    }));

  it('drops the connection of an endless undici response instead of draining it', async () => {
    let closed!: () => void;
    const gone = new Promise<void>((r) => {
      closed = r;
    });
    const server = createServer((_req, res) => {
      res.on('close', closed);
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await request(`http://127.0.0.1:${port}/`);
      await assert.rejects(readCapped(res.body, 100_000), BodyTooLarge);
      await gone;
    } finally {
      server.close();
    }
  });

  it('caps a stream passed through without buffering it, with the caller’s error', async () => {
    const ok = capStream(Readable.from([Buffer.alloc(10), Buffer.alloc(10)]), 20);
    let n = 0;
    for await (const c of ok) n += (c as Buffer).length;
    assert.equal(n, 20);
    const { s, seen } = counted(1000, 100);
    const over = capStream(s, 250, () => new Error('too big for the proxy'));
    await assert.rejects(
      (async () => {
        for await (const _ of over);
      })(),
      /too big for the proxy/,
    );
    assert.ok(seen.destroyed);
  });
});

describe('small body reader', () => {
  it('returns the whole body, byte for byte', async () => {
    const { s } = counted(3, 100);
    const b = await readSmall(s, 300);
    assert.equal(b.length, 300);
    assert.deepEqual([b[0], b[100], b[299]], [1, 2, 3]);
  });

  it('refuses a body past the cap and closes the source', async () => {
    const { s, seen } = counted(1000, 100);
    await assert.rejects(
      readSmall(s, 250, 'upstream response'),
      (e: unknown) => e instanceof BodyTooLarge && /upstream response exceeds 250/.test(e.message),
    );
    assert.ok(seen.destroyed);
    assert.ok(seen.pulled < 10);
  });

  it('fails when the source errors or closes before its end', async () => {
    const failing = new Readable({ read() {} });
    failing.push(Buffer.from('part'));
    const r1 = readSmall(failing, 100);
    failing.destroy(new Error('reset'));
    await assert.rejects(r1, /reset/);
    const closed = new Readable({ read() {} });
    const r2 = readSmall(closed, 100);
    closed.destroy();
    await assert.rejects(r2, /closed before its end/);
  });
});

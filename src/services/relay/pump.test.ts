// The session pipe on real loopback sockets: bytes arrive intact through a slow reader (the reused
// read buffer is never overwritten while a write still sends from it), FIN and shutdown propagate.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type PumpHost, pump } from './pump.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Two client sockets and the server's accepted (paused) ends of each. */
async function pair(server: Server) {
  const accepted: Socket[] = [];
  const got = new Promise<void>((resolve) => {
    const on = (s: Socket) => {
      s.pause();
      accepted.push(s);
      if (accepted.length === 2) {
        server.off('connection', on);
        resolve();
      }
    };
    server.on('connection', on);
  });
  const port = (server.address() as { port: number }).port;
  const x = connect({ host: '127.0.0.1', port });
  await new Promise((r) => x.once('connect', r));
  await new Promise((r) => setTimeout(r, 20)); // accept order = connect order
  const y = connect({ host: '127.0.0.1', port });
  await got;
  return { x, y, a: accepted[0] as Socket, b: accepted[1] as Socket };
}

function host(o: Partial<PumpHost> = {}) {
  const h = { closed: false, ends: 0, errors: 0 };
  const api: PumpHost = {
    get closed() {
      return h.closed;
    },
    delay: () => 0,
    finished: () => h.ends++,
    failed: () => h.errors++,
    ...o,
  };
  return { h, api };
}

/** Reads everything until `n` bytes, pausing for `stallMs` first so the relay's writes back up. */
function readAll(s: Socket, n: number, stallMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    s.pause();
    s.on('data', (c: Buffer) => {
      parts.push(c);
      got += c.length;
      if (got >= n) resolve(Buffer.concat(parts));
    });
    s.once('close', () => reject(new Error(`closed after ${got} of ${n}`)));
    setTimeout(() => s.resume(), stallMs);
  });
}

// A pump that loses bytes or a close would leave a test waiting: fail it instead.
const opts = { timeout: 20_000 };

describe('relay session pump', () => {
  let server: Server;
  const accepted = new Set<Socket>();
  before(async () => {
    server = createServer();
    server.on('connection', (s: Socket) => {
      accepted.add(s);
      s.once('close', () => accepted.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  // A pumped socket left with its reads stopped (a rate-limit wait, on an unref'd timer) sees no
  // peer close and keeps no event loop alive: close() would wait for it after the loop had ended
  // (seen once on Node 20). What is left is destroyed; a destroyed accepted socket closes its pump.
  after(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of accepted) s.destroy();
      }),
  );

  for (const adoptable of [true, false]) {
    it(
      `delivers 24 MiB both ways byte for byte to a reader that stalls (${adoptable ? 'onread buffers' : "fallback 'data' path"})`,
      opts,
      async () => {
        const { x, y, a, b } = await pair(server);
        if (!adoptable) {
          // A handle without useUserBuffer cannot be adopted: the pump keeps Node's own buffers.
          for (const s of [a, b])
            Object.assign((s as unknown as { _handle: object })._handle, { useUserBuffer: 0 });
        }
        const { h, api } = host();
        const ends = pump(a, b, api, 16 * 1024);
        assert.equal(ends[0] !== a && ends[1] !== b, adoptable);
        const up = randomBytes(24 * 1024 * 1024);
        const down = randomBytes(3 * 1024 * 1024 + 5);
        const atY = readAll(y, up.length, 300);
        const atX = readAll(x, down.length, 100);
        x.write(up);
        y.write(down);
        assert.equal(sha(await atY), sha(up));
        assert.equal(sha(await atX), sha(down));
        // The adopted sockets count from the same handle: the pre-pump reads are included.
        assert.equal(ends[0].bytesRead, up.length);
        assert.equal(ends[1].bytesRead, down.length);
        assert.equal(h.errors, 0);
        x.destroy();
        y.destroy();
      },
    );
  }

  it('forwards bytes the accepted socket had already buffered, then a FIN', opts, async () => {
    const { x, y, a, b } = await pair(server);
    x.write('early');
    await new Promise((r) => setTimeout(r, 50));
    a.read(0); // pull the bytes into a's own buffer before the pump takes the handle
    const { h, api } = host();
    pump(a, b, api);
    const got = readAll(y, 5, 0);
    assert.equal((await got).toString(), 'early');
    const yEnded = new Promise((r) => y.once('end', r));
    x.end();
    await yEnded;
    assert.equal(h.ends, 1);
    x.destroy();
    y.destroy();
  });

  it(
    'closes the adopted sockets when the accepted ones are destroyed (listener shutdown)',
    opts,
    async () => {
      const { x, y, a, b } = await pair(server);
      const { api } = host();
      const [na, nb] = pump(a, b, api);
      const closed = Promise.all([na, nb].map((s) => new Promise((r) => s.once('close', r))));
      const peersClosed = Promise.all([x, y].map((s) => new Promise((r) => s.once('close', r))));
      x.resume();
      y.resume();
      a.destroy();
      b.destroy();
      await closed;
      await peersClosed;
      assert.ok(a.destroyed && b.destroyed);
    },
  );

  it('reads nothing more while a rate-limit wait is pending', opts, async () => {
    const { x, y, a, b } = await pair(server);
    let held = false;
    let waits = 0;
    let readWhileHeld = 0;
    const { api } = host({
      delay: () => {
        if (held) readWhileHeld++;
        if (++waits % 4) return 0;
        // Set before the pump's own timer of the same length, so it is lifted first.
        held = true;
        setTimeout(() => {
          held = false;
        }, 5);
        return 5;
      },
    });
    pump(a, b, api, 8 * 1024);
    const body = randomBytes(1024 * 1024);
    const got = readAll(y, body.length, 0);
    x.write(body);
    assert.equal(sha(await got), sha(body));
    assert.ok(waits >= 8, `only ${waits} chunks`);
    assert.equal(readWhileHeld, 0);
    x.destroy();
    y.destroy();
  });
});

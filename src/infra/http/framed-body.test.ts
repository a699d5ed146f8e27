// A body sent from its frame (framed-body.ts) goes out as the same bytes as res.end(body) would
// send, answer after answer, and a frame the socket still holds bytes of is reported as such (the
// lane then lets it go) while every answer still arrives whole.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Frame, pendingHead } from './framed-body.ts';

/** Every byte value, a few times over. */
const SMALL = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256));
/** Big enough that a client that reads nothing fills loopback's buffers within a few hundred. */
const LARGE = Buffer.alloc(60 * 1024, 0xa5);

/**
 * Sends raw `requests` on one connection and resolves with the bytes once `bytes` says they are all
 * there (asked from `least` bytes on).
 */
function exchange(
  port: number,
  requests: string,
  bytes: (got: Buffer) => boolean,
  o: { paused?: number; least?: number } = {},
): Promise<Buffer> {
  const paused = o.paused ?? 0;
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let size = 0;
    sock.on('error', reject);
    sock.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size < (o.least ?? 0)) return;
      const got = Buffer.concat(chunks, size);
      if (bytes(got)) {
        sock.destroy();
        resolve(got);
      }
    });
    if (paused > 0) {
      sock.pause();
      setTimeout(() => sock.resume(), paused);
    }
    sock.write(requests);
  });
}

/** The answers in `raw`, each as its head (without the Date line) and its body. */
function answers(raw: Buffer): { head: string; body: Buffer }[] {
  const out: { head: string; body: Buffer }[] = [];
  let at = 0;
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const head = raw.subarray(at, end).toString('latin1');
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    if (end + 4 + length > raw.length) break;
    out.push({ head: head.replace(/\r\nDate: [^\r]*/, ''), body: raw.subarray(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

function complete(count: number) {
  return (got: Buffer) => answers(got).length >= count;
}

describe('framed bodies', { timeout: 60_000 }, () => {
  let server: Server;
  let port: number;
  const frames = { small: new Frame(SMALL, 0), large: new Frame(LARGE, 0) };
  /** What Frame.send returned, per answer of the large body. */
  const kept: boolean[] = [];
  let n = 0;
  let chunkedHead: string | null | undefined;

  function head(res: ServerResponse, body: Buffer): void {
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'x-n': String(++n),
      'content-length': body.length,
    });
  }

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/chunked') {
        // No Content-Length: Node sends the body in chunks, and a frame would go out as one.
        res.writeHead(200, { 'content-type': 'text/plain' });
        chunkedHead = pendingHead(res);
        res.end('chunked');
        return;
      }
      if (req.url === '/plain') {
        head(res, SMALL);
        res.end(SMALL);
        return;
      }
      const large = req.url === '/large';
      // As the lane does: only a response that has its connection (not one waiting behind another).
      const answer = () => {
        head(res, large ? LARGE : SMALL);
        const h = pendingHead(res);
        assert.ok(h !== null, 'writeHead left its head to be written');
        const ok = frames[large ? 'large' : 'small'].send(res, h);
        // As the lane does: a frame the socket keeps is let go.
        if (!ok) frames[large ? 'large' : 'small'] = new Frame(large ? LARGE : SMALL, 0);
        if (large) kept.push(ok);
      };
      if (res.socket) answer();
      else res.once('socket', answer);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  after(() => {
    server.close();
    server.closeAllConnections();
  });

  it('sends the bytes res.end(body) sends, answer after answer', async () => {
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`;
    const plain = answers(await exchange(port, get('/plain').repeat(2), complete(2)));
    const framed = answers(await exchange(port, get('/small').repeat(3), complete(3)));
    assert.equal(plain.length, 2);
    assert.equal(framed.length, 3);
    for (const [i, a] of framed.entries()) {
      // The same head but for its own X-N (and Date, left out), the same body.
      assert.equal(a.head.replace(/x-n: \d+/, ''), plain[0]!.head.replace(/x-n: \d+/, ''));
      assert.match(a.head, new RegExp(`\\r\\nx-n: ${n - 2 + i}(\\r|$)`));
      assert.ok(a.body.equals(SMALL), `answer ${i} carries the body byte for byte`);
    }
  });

  it('says when the socket keeps its bytes, and every answer still arrives whole', async () => {
    const count = 400;
    const first = n + 1;
    // Pipelined, read only after a while: the server's writes stall once loopback's buffers are full.
    const raw = await exchange(
      port,
      'GET /large HTTP/1.1\r\nhost: x\r\n\r\n'.repeat(count),
      complete(count),
      { paused: 1000, least: count * LARGE.length },
    );
    assert.ok(kept.includes(false), 'a write left bytes with the socket');
    assert.ok(kept.includes(true));
    const got = answers(raw);
    assert.equal(got.length, count);
    for (const [i, a] of got.entries()) {
      assert.match(a.head, new RegExp(`\\r\\nx-n: ${first + i}(\\r|$)`));
      assert.ok(a.body.equals(LARGE), `answer ${i} carries the body byte for byte`);
    }
  });

  it('has no pending head for a body Node sends chunked', async () => {
    const raw = await exchange(port, 'GET /chunked HTTP/1.1\r\nhost: x\r\n\r\n', (got) =>
      got.includes('\r\n0\r\n\r\n'),
    );
    assert.match(raw.toString('latin1'), /transfer-encoding: chunked/i);
    assert.equal(chunkedHead, null);
  });

  it('has no pending head once the head went out, and a frame too small for a head says so', () => {
    const res = { _header: 'HTTP/1.1 200 OK\r\n\r\n', _headerSent: true } as unknown as ServerResponse;
    assert.equal(pendingHead(res), null);
    assert.equal(pendingHead({ _header: null, _headerSent: false } as unknown as ServerResponse), null);
    const f = new Frame(SMALL, 10);
    assert.ok(f.fits('x'.repeat(1024)));
    assert.ok(!f.fits('x'.repeat(2000)));
    assert.equal(new Frame(SMALL, 2000).size, 2500 + SMALL.length);
  });
});

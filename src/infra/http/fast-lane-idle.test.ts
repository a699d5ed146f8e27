// The fast lane takes the server's idle timeout over from Node (FastLane.install): a connection
// that stops reading is still closed after it, whether its answer came from the lane or from the
// router, and a connection that sends nothing is closed after it too. Each case first has one
// answer read whole on the same connection, so Node's keep-alive wait has begun and ended: the
// timer Node re-armed there (before the lane) is the one the lane has to arm itself now. The
// server's end of the connection is watched: a client that reads nothing does not see the close.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { RateLimiter } from '../limits/rate-limit.ts';
import { HttpStats } from '../observe/http-stats.ts';
import { Drain } from './drain.ts';
import { FastLane } from './fast-lane.ts';
import { requestIds } from './request-id.ts';

const IDLE_MS = 400;
/** More than loopback's socket buffers hold on both ends: a client that reads nothing stalls it. */
const BIG = 48 * 1024 * 1024;

/** Resolves true when the socket closes within `ms`, false otherwise. */
function closesWithin(sock: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (sock.destroyed) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    sock.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** Reads one small answer whole (head and a body of `length` bytes) from a raw socket. */
function readAnswer(sock: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (c: Buffer) => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const m = /content-length: (\d+)/i.exec(text);
      if (end !== -1 && m && text.length >= end + 4 + Number(m[1])) {
        sock.off('data', onData);
        resolve(text);
      }
    };
    sock.on('data', onData);
    sock.once('error', reject);
  });
}

describe('the fast lane and the idle timeout', { timeout: 60_000 }, () => {
  let server: Server;
  let lane: FastLane;
  let port = 0;
  const big = 'x'.repeat(BIG);
  /** The server's end of each connection, by the client's port. */
  const ends = new Map<number, Socket>();
  /** Whether the server closes its end of the client's connection within `ms`. */
  const serverCloses = (client: Socket, ms: number) => {
    const end = ends.get(client.localPort ?? 0);
    assert.ok(end, 'the server has the connection');
    return closesWithin(end, ms);
  };
  before(async () => {
    server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      // The router's answer: as big as the lane's.
      res.setHeader('content-type', 'text/plain');
      res.end(big);
    });
    server.timeout = IDLE_MS;
    server.on('connection', (sock: Socket) => ends.set(sock.remotePort ?? 0, sock));
    server.keepAliveTimeout = 60_000;
    lane = new FastLane({
      limiter: {} as RateLimiter,
      http: new HttpStats(),
      usage: null,
      tracing: null,
      drain: new Drain(),
      logger: pino({ level: 'silent' }),
      ids: requestIds(),
      ip: { trusted: null, header: 'x-forwarded-for' },
      v6Bits: 64,
      rewrite: null,
    });
    const answer = (body: string) => () => ({ headers: ['content-type', 'text/plain'], body });
    lane.route('/small', { svc: 'test', route: '/small', answer: answer('small') });
    lane.route('/big', { svc: 'test', route: '/big', answer: answer(big) });
    lane.install(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  async function keptAlive(): Promise<Socket> {
    const sock = connect(port, '127.0.0.1');
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    const answered = lane.answered;
    const read = readAnswer(sock);
    sock.write('GET /small HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(await read, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nsmall$/);
    assert.equal(lane.answered, answered + 1, 'the lane answered /small');
    return sock;
  }

  it('leaves Node no idle timeout of its own to re-arm', () => {
    assert.equal(server.timeout, 0);
  });

  it('closes a connection that stops reading a lane answer', async () => {
    const sock = await keptAlive();
    const answered = lane.answered;
    sock.pause();
    sock.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
    const closed = await serverCloses(sock, 10_000);
    sock.destroy();
    assert.equal(lane.answered, answered + 1, 'the lane answered /big');
    assert.ok(closed, 'a stalled reader of a lane answer must be closed after the idle timeout');
  });

  it('closes a connection that stops reading an answer of the router', async () => {
    const sock = await keptAlive();
    const answered = lane.answered;
    sock.pause();
    sock.write('GET /router HTTP/1.1\r\nHost: x\r\n\r\n');
    const closed = await serverCloses(sock, 10_000);
    sock.destroy();
    assert.equal(lane.answered, answered, 'the router answered');
    assert.ok(closed, 'a stalled reader of a router answer must be closed after the idle timeout');
  });

  it('closes a connection that sends nothing', async () => {
    const sock = connect(port, '127.0.0.1');
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    const closed = await serverCloses(sock, 10_000);
    sock.destroy();
    assert.ok(closed);
  });
});

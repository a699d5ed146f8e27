// Slow clients (slowloris headers) are cut off by the server's deadlines without starving others.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Running, startTestServer } from '../helpers/server.ts';

function closedWithin(sock: Socket, ms: number): Promise<{ closed: boolean; data: string }> {
  return new Promise((resolve) => {
    let data = '';
    sock.on('data', (c) => {
      data += c;
    });
    const t = setTimeout(() => resolve({ closed: false, data }), ms);
    sock.once('close', () => {
      clearTimeout(t);
      resolve({ closed: true, data });
    });
  });
}

describe('slow clients', () => {
  let srv: Running;
  before(async () => {
    srv = await startTestServer({
      overrides: { server: { headersTimeoutMs: 1000, requestTimeoutMs: 3000, idleTimeoutMs: 2000 } },
    });
  });
  after(async () => srv.close());

  it('closes a slowloris connection that never finishes its headers, while others are served', async () => {
    const sock = connect(srv.port, '127.0.0.1');
    // The server's close can meet a header line still on its way: the client then reads a reset,
    // which is a close too ('close' follows), not a failure of the test.
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET /rest/api/v1/ip HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => {
      if (!sock.destroyed) sock.write('X-a: b\r\n');
    }, 200);
    const done = closedWithin(sock, 8000);
    // A well-behaved client is served meanwhile.
    const r = await fetch(`${srv.url}/rest/api/v1/ip`);
    assert.equal(r.status, 200);
    const { closed, data } = await done;
    clearInterval(drip);
    sock.destroy();
    assert.ok(closed, 'the server must close a connection whose headers never end');
    assert.ok(data === '' || data.startsWith('HTTP/1.1 408'), `unexpected answer ${data.slice(0, 40)}`);
  });

  it('closes a connection that goes silent before sending anything', async () => {
    const sock = connect(srv.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    const { closed } = await closedWithin(sock, 8000);
    sock.destroy();
    assert.ok(closed);
  });
});

// test-file-timeout: 60 s
// Closing the server (what SIGTERM does after the drain delay) on the real app: a connection accepted
// before the close whose request arrives after it is answered, not reset (Node 26's own
// closeIdleConnections cut it); a kept-alive connection waiting for its next request is closed at
// once; a connection that never sends anything is closed after the first-request grace, and the
// close completes (on Node 20 it held the close open).
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { startTestServer } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';
import { FIRST_REQUEST_GRACE_MS } from './drain.ts';

/** A raw TCP client: everything the server sent, and how the connection ended. */
function rawClient(port: number): Promise<{ sock: Socket; received: () => string; ended: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let data = '';
    sock.on('data', (c: Buffer) => {
      data += c.toString('latin1');
    });
    const ended = new Promise<string>((r) => {
      sock.once('error', (e: NodeJS.ErrnoException) => r(`error ${e.code}`));
      sock.once('close', () => r('closed'));
    });
    sock.once('connect', () => resolve({ sock, received: () => data, ended }));
    sock.once('error', reject);
  });
}

describe('closing the server', { timeout: 60_000 }, () => {
  it('answers a request that arrives on a connection accepted before the close', async () => {
    const srv = await startTestServer();
    const { drain } = srv.app.ctx;
    drain.firstRequestGraceMs = 60_000; // a busy machine may take seconds between the steps below
    const c = await rawClient(srv.port);
    try {
      await waitFor(() => drain.counts().open === 1, 'the server accepted the connection');
      assert.equal(drain.closeIdle(), 0, 'a connection that has not asked yet is not closed at once');
      const closing = srv.close();
      // The request reaches the server after the close began (nginx sends it right after connecting;
      // a busy event loop reads it a turn later).
      c.sock.write('GET /rest/api/v1/ip?format=text HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await c.ended, 'closed');
      assert.match(c.received(), /^HTTP\/1\.1 200 /);
      assert.match(c.received(), /\r\nconnection: close\r\n/i);
      assert.match(c.received(), /\r\n\r\n127\.0\.0\.1\s*$/);
      await closing;
    } finally {
      c.sock.destroy();
      await srv.close().catch(() => {});
    }
  });

  it('closes a kept-alive connection that waits for its next request at once', async () => {
    const srv = await startTestServer();
    const c = await rawClient(srv.port);
    try {
      c.sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => /\r\n\r\n/.test(c.received()), 'the first answer');
      assert.match(c.received(), /\r\nconnection: keep-alive\r\n/i);
      srv.app.ctx.drain.firstRequestGraceMs = 60_000;
      assert.equal(srv.app.ctx.drain.closeIdle(), 1, 'closed at once, not after a grace');
      assert.equal(await c.ended, 'closed');
      await srv.close();
    } finally {
      c.sock.destroy();
    }
  });

  it(`closes a connection that sends nothing within the grace (${FIRST_REQUEST_GRACE_MS} ms) of its accept, and the close completes`, async () => {
    const srv = await startTestServer();
    const { drain } = srv.app.ctx;
    drain.firstRequestGraceMs = 500;
    const c = await rawClient(srv.port);
    try {
      await waitFor(() => drain.counts().open === 1, 'the server accepted the connection');
      const acceptedBy = Date.now();
      await srv.close();
      assert.equal(await c.ended, 'closed');
      assert.equal(c.received(), '', 'closed without an answer: it asked nothing');
      assert.ok(Date.now() - acceptedBy >= 400, 'not before its grace');
    } finally {
      c.sock.destroy();
    }
  });
});

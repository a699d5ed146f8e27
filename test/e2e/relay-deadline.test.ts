// The relay's first message has a deadline counted from accept: a client that trickles it, byte by
// byte, in either mode or inside the TLS handshake, is closed at the configured message timeout while
// a well-behaved client joins as usual. Runs `devutil serve` as a child process.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { clientIdentity, connectTls, joinRelay } from '../../src/services/relay/client.ts';
import { encode } from '../../src/services/relay/protocol/messages.ts';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';

interface Trickled {
  closedByServer: boolean;
  /** Bytes written before the server closed the connection. */
  sent: number;
  received: number;
}

/** Writes `bytes` one at a time every `everyMs` until the peer closes or `waitMs` passes. */
function trickle(sock: Socket, bytes: Buffer, everyMs: number, waitMs = 20_000): Promise<Trickled> {
  return new Promise((resolve) => {
    let sent = 0;
    let received = 0;
    sock.on('data', (c: Buffer) => {
      received += c.length;
    });
    sock.on('error', () => {});
    const tick = setInterval(() => {
      if (sent < bytes.length && !sock.destroyed) sock.write(bytes.subarray(sent, ++sent));
    }, everyMs);
    const finish = (closedByServer: boolean) => {
      clearInterval(tick);
      clearTimeout(limit);
      sock.destroy();
      resolve({ closedByServer, sent, received });
    };
    const limit = setTimeout(() => finish(false), waitMs);
    sock.once('close', () => finish(true));
  });
}

/** A real TLS ClientHello for the relay, captured from node's TLS client. */
function clientHello(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const id = clientIdentity();
    const srv = createServer((s) => {
      s.once('data', (c: Buffer) => {
        resolve(c);
        s.destroy();
        srv.close();
      });
    });
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      const t = tlsConnect({
        host: '127.0.0.1',
        port,
        cert: id.certPem,
        key: id.keyPem,
        ALPNProtocols: ['bep-relay'],
        rejectUnauthorized: false,
      });
      t.on('error', () => {});
    });
    srv.on('error', reject);
  });
}

async function metric(dev: DevutilProcess, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${dev.url}/metrics`)).text();
  const m = pattern.exec(text);
  return m ? Number(m[1]) : 0;
}

describe('relay first-message deadline', () => {
  let dev: DevutilProcess;
  let relayPort = 0;
  before(async () => {
    relayPort = await freePort();
    dev = await startDevutilProcess({
      DEVUTIL_RELAY_ENABLED: 'true',
      DEVUTIL_RELAY_HOST: '127.0.0.1',
      DEVUTIL_RELAY_PORT: String(relayPort),
      DEVUTIL_RELAY_STATUS_PORT: '0',
      // Short deadline; the join and idle limits stay long, so only the deadline can close these.
      DEVUTIL_RELAY_MESSAGE_TIMEOUT: '1500ms',
      DEVUTIL_RELAY_PING_INTERVAL: '60s',
      DEVUTIL_RELAY_NETWORK_TIMEOUT: '120s',
    });
    for (let i = 0; i < 100 && !/relay listening/.test(dev.output()); i++)
      await new Promise((r) => setTimeout(r, 100));
  });
  after(async () => {
    await dev?.stop();
  });

  it('closes a session-mode socket that trickles its JoinSessionRequest', async () => {
    const frame = encode({ type: 'joinSessionRequest', key: randomBytes(32) });
    const sock = connect(relayPort, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    // 48 bytes at one per 250 ms would take 12 s; an idle timer of 1.5 s never fires.
    const r = await trickle(sock, frame, 250);
    assert.equal(r.closedByServer, true, 'the relay must close the socket');
    assert.ok(r.sent < frame.length, `closed only after the whole frame (${r.sent} bytes)`);
    assert.equal(r.received, 0);
  });

  it('closes a TLS connection that trickles its first message after the handshake', async () => {
    const stream = await connectTls('127.0.0.1', relayPort, clientIdentity());
    const frame = encode({ type: 'joinRelayRequest', token: 't'.repeat(64) });
    const r = await trickle(stream.sock, frame, 250);
    assert.equal(r.closedByServer, true, 'the relay must close the connection');
    assert.ok(r.sent < frame.length, `closed only after the whole frame (${r.sent} bytes)`);
    assert.equal(r.received, 0);
  });

  it('closes a connection that trickles its TLS ClientHello', async () => {
    const hello = await clientHello();
    const sock = connect(relayPort, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    const r = await trickle(sock, hello, 100);
    assert.equal(r.closedByServer, true);
    assert.ok(
      r.sent < hello.length,
      `closed only after the whole hello (${r.sent} of ${hello.length} bytes)`,
    );
  });

  it('counts the deadline closes and still lets a prompt client join', async () => {
    assert.ok((await metric(dev, /devutil_relay_refused_total\{reason="deadline"\} (\d+)/)) >= 3);
    const j = await joinRelay('127.0.0.1', relayPort, clientIdentity());
    assert.deepEqual(j.reply, { type: 'response', code: 0, message: 'success' });
    // Past the deadline a joined client stays: the deadline only covers the first message.
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(j.stream.sock.destroyed, false);
    j.stream.close();
  });
});

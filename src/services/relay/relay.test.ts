// The relay driven by a raw-protocol client: join, connect, invitations, session pairing, data both
// ways, timeouts, RelayFull, tokens and hostile input that must close only the offending connection.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { pino } from 'pino';
import { freePort } from '../../../test/helpers/ports.ts';
import { testRelaySettings } from '../../../test/helpers/relay.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import {
  type ClientIdentity,
  clientIdentity,
  connectTls,
  joinRelay,
  joinSession,
  type MessageStream,
  requestSession,
} from './client.ts';
import { loadOrCreateIdentity } from './identity.ts';
import { encode, type Message } from './protocol/messages.ts';
import { Relay, type RelaySettings } from './relay.ts';

const H = '127.0.0.1';
const logger = pino({ level: 'silent' });

const startRelay = (o: Partial<RelaySettings> = {}) =>
  Relay.start(testRelaySettings(o), loadOrCreateIdentity(tempDir()), logger);

/** Resolves when the socket is closed by the other end (or already closed). */
function closedSock(s: Socket): Promise<void> {
  if (s.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    s.once('close', () => resolve());
    s.resume();
  });
}

function readN(s: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    const onData = (c: Buffer) => {
      parts.push(c);
      got += c.length;
      if (got >= n) {
        s.off('data', onData);
        resolve(Buffer.concat(parts));
      }
    };
    s.on('data', onData);
    s.once('close', () => (got < n ? reject(new Error(`closed after ${got} of ${n} bytes`)) : undefined));
    s.resume();
  });
}

function invitation(m: Message): Extract<Message, { type: 'sessionInvitation' }> {
  assert.equal(m.type, 'sessionInvitation', `expected an invitation, got ${JSON.stringify(m)}`);
  return m as Extract<Message, { type: 'sessionInvitation' }>;
}

/** Joins A, has B ask for A; returns both invitations. */
async function invite(relay: Relay, a: MessageStream, aId: ClientIdentity, bId: ClientIdentity) {
  const client = invitation(await requestSession(H, relay.port, bId, aId.raw));
  const server = invitation(await besidesPings(a));
  return { client, server };
}

/**
 * The next message other than the relay's pings (the stream answers them itself): with a short ping
 * interval on a loaded machine, a ping can come before the invitation.
 */
async function besidesPings(s: MessageStream): Promise<Message> {
  for (;;) {
    const m = await s.next();
    if (m.type !== 'ping') return m;
  }
}

describe('relay over the raw protocol', { timeout: 300_000 }, () => {
  let relay: Relay;
  const a = clientIdentity();
  const b = clientIdentity();
  let aStream: MessageStream;

  before(async () => {
    relay = await startRelay({ statusPort: await freePort() });
    const j = await joinRelay(H, relay.port, a);
    aStream = j.stream;
    assert.deepEqual(j.reply, { type: 'response', code: 0, message: 'success' });
  });
  after(async () => {
    aStream?.close();
    await relay?.close();
  });

  it('negotiates ALPN bep-relay and pins to the relay device ID', async () => {
    const s = await connectTls(H, relay.port, b);
    const tls = s.sock as import('node:tls').TLSSocket;
    assert.equal(tls.alpnProtocol, 'bep-relay');
    const der = tls.getPeerCertificate(true).raw;
    assert.equal(der.toString('hex'), relay.identity.certDer.toString('hex'));
    s.close();
  });

  it('answers a second join of the same device with "already connected" and keeps the first', async () => {
    const j = await joinRelay(H, relay.port, a);
    assert.deepEqual(j.reply, { type: 'response', code: 2, message: 'already connected' });
    await j.stream.closed();
    assert.ok(relay.joined.has(a.raw.toString('hex')));
  });

  it('answers a connect request for an unknown device with "not found"', async () => {
    const reply = await requestSession(H, relay.port, b, randomBytes(32));
    assert.deepEqual(reply, { type: 'response', code: 1, message: 'not found' });
  });

  it('invites both sides, pairs them and pipes data both ways verbatim', async () => {
    const { client, server } = await invite(relay, aStream, a, b);
    assert.deepEqual(client.from, a.raw);
    assert.deepEqual(server.from, b.raw);
    assert.equal(client.serverSocket, false);
    assert.equal(server.serverSocket, true);
    assert.equal(client.port, relay.port);
    assert.deepEqual(client.address, Buffer.from([127, 0, 0, 1]));
    assert.notDeepEqual(client.key, server.key);

    const sa = await joinSession(H, relay.port, server.key);
    const sb = await joinSession(H, relay.port, client.key);
    const up = randomBytes(3 * 1024 * 1024);
    const down = randomBytes(1024 * 1024 + 7);
    const gotAtA = readN(sa, up.length);
    const gotAtB = readN(sb, down.length);
    sb.write(up);
    sa.write(down);
    const sha = (x: Buffer) => createHash('sha256').update(x).digest('hex');
    assert.equal(sha(await gotAtA), sha(up));
    assert.equal(sha(await gotAtB), sha(down));

    const st = relay.status();
    assert.equal(st.numActiveSessions, 1);
    assert.equal(st.numProxies, 2);
    assert.equal(st.bytesProxied, up.length + down.length);
    const http = await fetch(`http://${H}:${relay.statusPort}/status`);
    assert.equal(http.headers.get('access-control-allow-origin'), '*');
    const body = (await http.json()) as Record<string, unknown>;
    assert.equal(body.numActiveSessions, 1);
    assert.equal(body.bytesProxied, up.length + down.length);

    // One side goes away: the relay closes the other one too.
    sa.destroy();
    await closedSock(sb);
    assert.equal(relay.status().numActiveSessions, 0);
  });

  it('delivers bytes sent right behind the join request to the peer', async () => {
    const { client, server } = await invite(relay, aStream, a, b);
    const sa = await joinSession(H, relay.port, server.key);
    const raw = netConnect({ host: H, port: relay.port });
    raw.write(Buffer.concat([encode({ type: 'joinSessionRequest', key: client.key }), Buffer.from('early')]));
    assert.equal((await readN(sa, 5)).toString(), 'early');
    raw.destroy();
    await closedSock(sa);
  });

  it('refuses an unknown or already used session key with "not found"', async () => {
    await assert.rejects(joinSession(H, relay.port, randomBytes(32)), /1 not found/);
    const { client, server } = await invite(relay, aStream, a, b);
    const sa = await joinSession(H, relay.port, server.key);
    await assert.rejects(joinSession(H, relay.port, server.key), /1 not found/);
    sa.destroy();
    await assert.rejects(joinSession(H, relay.port, client.key), /not found|closed/);
  });

  const hostilePlain: [string, Buffer][] = [
    ['garbage bytes', Buffer.from('GET / HTTP/1.1\r\n\r\n')],
    ['a negative length', Buffer.from('9e79bc4000000003ffffffff', 'hex')],
    ['a huge length', Buffer.from('9e79bc40000000037fffffff', 'hex')],
    ['an unknown type', Buffer.from('9e79bc40000000630000000000000000', 'hex')],
    ['a truncated key', Buffer.from('9e79bc40000000030000000800000020abcd0000', 'hex')],
    [
      'a TLS record (0x16, so the TLS side) that is not a ClientHello',
      Buffer.from(`1603010010${'ab'.repeat(16)}`, 'hex'),
    ],
  ];
  for (const [name, bytes] of hostilePlain) {
    it(`closes a session-mode socket that sends ${name}, and only that one`, async () => {
      const s = netConnect({ host: H, port: relay.port });
      s.write(bytes);
      await closedSock(s);
      aStream.send({ type: 'ping' });
      assert.deepEqual(await aStream.next(), { type: 'pong' });
    });
  }

  it('answers a Ping in session mode with "unexpected message" and closes', async () => {
    const s = netConnect({ host: H, port: relay.port });
    s.write(encode({ type: 'ping' }));
    const got = await readN(s, 12);
    assert.equal(got.readInt32BE(4), 4); // a Response
    assert.equal(got.readInt32BE(12), 100);
    await closedSock(s);
  });

  const hostileTls: [string, Buffer][] = [
    ['bad magic', Buffer.from('deadbeef0000000000000000', 'hex')],
    ['an oversize frame', Buffer.from('9e79bc400000000200000401', 'hex')],
    ['an unknown type', Buffer.from('9e79bc40000000090000000000000000', 'hex')],
    ['a truncated connect request', Buffer.from('9e79bc400000000500000004000000ff', 'hex')],
  ];
  for (const [name, bytes] of hostileTls) {
    it(`closes a TLS connection that sends ${name}, leaving joined clients alone`, async () => {
      const s = await connectTls(H, relay.port, b);
      s.sock.write(bytes);
      await s.closed();
      aStream.send({ type: 'ping' });
      assert.deepEqual(await aStream.next(), { type: 'pong' });
      assert.ok(relay.joined.has(a.raw.toString('hex')));
    });
  }

  it('answers a session-mode message over TLS with "unexpected message"', async () => {
    const s = await connectTls(H, relay.port, b);
    s.send({ type: 'joinSessionRequest', key: randomBytes(32) });
    assert.deepEqual(await s.next(), { type: 'response', code: 100, message: 'unexpected message' });
    await s.closed();
  });

  it('drops a TLS client that presents no certificate', async () => {
    const s = tlsConnect({
      host: H,
      port: relay.port,
      rejectUnauthorized: false,
      ALPNProtocols: ['bep-relay'],
    });
    s.on('error', () => {});
    s.resume();
    await new Promise<void>((resolve) => s.once('close', () => resolve()));
    assert.equal(relay.status().numConnections, 1); // only A
  });

  it('serves /status as strelaysrv does: sorted keys, 4-space JSON, 404 elsewhere', async () => {
    const res = await fetch(`http://${H}:${relay.statusPort}/status`);
    const text = await res.text();
    assert.ok(text.startsWith('{\n    "buildDate": ""'), text.slice(0, 40));
    const keys = Object.keys(JSON.parse(text));
    assert.deepEqual(keys, [...keys].sort());
    assert.equal(res.headers.get('connection'), 'close');
    assert.equal((await fetch(`http://${H}:${relay.statusPort}/status/x`)).status, 404);
  });

  it('survives a plain connection that never sends a byte by closing it', async () => {
    const s = netConnect({ host: H, port: relay.port });
    await closedSock(s);
  });
});

describe('relay timers and limits', { timeout: 300_000 }, () => {
  it('pings joined clients, and closes those that stop answering and those that never join', async () => {
    // Margins are wide (5 pings per timeout) so a loaded CI machine does not make this flaky.
    const relay = await startRelay({ pingIntervalMs: 300, networkTimeoutMs: 1500 });
    try {
      const good = await joinRelay(H, relay.port, clientIdentity());
      assert.deepEqual(await good.stream.next(), { type: 'ping' });
      const mute = await joinRelay(H, relay.port, clientIdentity());
      mute.stream.autoPong = false;
      const lurker = await connectTls(H, relay.port, clientIdentity());
      await lurker.closed(); // not joined at the first tick
      await mute.stream.closed(); // silent past the network timeout
      assert.equal(good.stream.sock.destroyed, false);
      assert.equal(relay.joined.size, 1);
      good.stream.close();
    } finally {
      await relay.close();
    }
  });

  // Its own clock bound, ten times the deadline: a session kept past it (a fixed two minutes, say)
  // fails here instead of passing late.
  it('discards a session that is not paired within the message timeout', { timeout: 15_000 }, async () => {
    const relay = await startRelay({ messageTimeoutMs: 1500 });
    try {
      const a = clientIdentity();
      const j = await joinRelay(H, relay.port, a);
      const { server } = await invite(relay, j.stream, a, clientIdentity());
      const sa = await joinSession(H, relay.port, server.key);
      await closedSock(sa);
      assert.equal(relay.status().numPendingSessionKeys, 0);
      j.stream.close();
    } finally {
      await relay.close();
    }
  });

  it('closes both ends of a paired session that stays idle past the network timeout', async () => {
    // Pings every 300 ms keep the joined connection itself alive (its Pongs count as traffic).
    const relay = await startRelay({ networkTimeoutMs: 1500, pingIntervalMs: 300 });
    try {
      const a = clientIdentity();
      const j = await joinRelay(H, relay.port, a);
      const { client, server } = await invite(relay, j.stream, a, clientIdentity());
      const sa = await joinSession(H, relay.port, server.key);
      const sb = await joinSession(H, relay.port, client.key);
      const got = readN(sa, 3);
      sb.write('hi!');
      assert.equal((await got).toString(), 'hi!');
      await Promise.all([closedSock(sa), closedSock(sb)]);
      assert.equal(relay.status().numActiveSessions, 0);
      assert.equal(relay.status().bytesProxied, 3);
      assert.equal(j.stream.sock.destroyed, false); // closed as idle, not because A left
      j.stream.close();
    } finally {
      await relay.close();
    }
  });

  it('sends RelayFull to joins over the connection limit', async () => {
    const relay = await startRelay({ maxConnections: 1 });
    try {
      const first = await joinRelay(H, relay.port, clientIdentity());
      assert.equal(first.reply.type, 'response');
      const second = await joinRelay(H, relay.port, clientIdentity());
      assert.deepEqual(second.reply, { type: 'relayFull' });
      await second.stream.closed();
      first.stream.close();
    } finally {
      await relay.close();
    }
  });

  it('requires the configured token and answers others with "wrong token"', async () => {
    const relay = await startRelay({ token: 's3cret' });
    try {
      const bad = await joinRelay(H, relay.port, clientIdentity(), 'nope');
      assert.deepEqual(bad.reply, { type: 'response', code: 3, message: 'wrong token' });
      const old = await joinRelay(H, relay.port, clientIdentity());
      assert.deepEqual(old.reply, { type: 'response', code: 3, message: 'wrong token' });
      const good = await joinRelay(H, relay.port, clientIdentity(), 's3cret');
      assert.deepEqual(good.reply, { type: 'response', code: 0, message: 'success' });
      good.stream.close();
    } finally {
      await relay.close();
    }
  });

  it('still delivers every byte intact under a per-session and a global rate limit', async () => {
    const relay = await startRelay({ perSessionRate: 256 * 1024, globalRate: 512 * 1024 });
    try {
      const a = clientIdentity();
      const j = await joinRelay(H, relay.port, a);
      const { client, server } = await invite(relay, j.stream, a, clientIdentity());
      const sa = await joinSession(H, relay.port, server.key);
      const sb = await joinSession(H, relay.port, client.key);
      const data = randomBytes(600 * 1024);
      const got = readN(sa, data.length);
      sb.write(data);
      assert.ok((await got).equals(data));
      sa.destroy();
      sb.destroy();
      j.stream.close();
    } finally {
      await relay.close();
    }
  });

  it('keeps the device ID across restarts of the same data directory', () => {
    const dir = tempDir();
    const first = loadOrCreateIdentity(dir);
    const second = loadOrCreateIdentity(dir);
    assert.equal(first.created, true);
    assert.equal(second.created, false);
    assert.equal(second.deviceId, first.deviceId);
    assert.match(first.deviceId, /^([A-Z2-7]{7}-){7}[A-Z2-7]{7}$/);
  });
});

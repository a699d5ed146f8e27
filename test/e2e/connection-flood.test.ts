// Issue 16 acceptance: under a 600-fd limit, 1000 slow connections from one address (slow JSON and
// diagram bodies, relay TLS connections trickling their first message) leave /healthz and a file
// upload from another address answering within 2 s; with the per-client cap off, the total cap
// derived from the fd limit keeps the process below that limit. `devutil serve` runs under prlimit.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { clientIdentity } from '../../src/services/relay/client.ts';
import { encode } from '../../src/services/relay/protocol/messages.ts';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { toolSkip } from '../helpers/tools.ts';

const FD_LIMIT = 600;
const FLOOD = 1000;
const ATTACKER = '127.0.0.2';
/** The acceptance figure: each of the two checks must answer within this. */
const ANSWER_MS = 2000;

async function start(env: Record<string, string>): Promise<{ dev: DevutilProcess; relayPort: number }> {
  const relayPort = await freePort();
  const dev = await startDevutilProcess(
    {
      DEVUTIL_LOG_LEVEL: 'warn',
      DEVUTIL_RELAY_ENABLED: 'true',
      DEVUTIL_RELAY_HOST: '127.0.0.1',
      DEVUTIL_RELAY_PORT: String(relayPort),
      DEVUTIL_RELAY_STATUS_PORT: '0',
      // Deadlines long enough that only the connection budget can be what keeps the service up.
      DEVUTIL_BODY_TIMEOUT_MS: '120000',
      DEVUTIL_RELAY_MESSAGE_TIMEOUT: '120s',
      ...env,
    },
    [],
    { wrapper: ['prlimit', `--nofile=${FD_LIMIT}:${FD_LIMIT}`, '--'] },
  );
  // The relay listens just after HTTP; wait for it.
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(relayPort, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { dev, relayPort };
}

/** The flood: every socket it opened and a timer that feeds each one a byte now and then. */
class Flood {
  readonly sockets: Socket[] = [];
  private readonly tick: NodeJS.Timeout;
  private readonly pending = new Map<Socket, Buffer>();

  constructor() {
    this.tick = setInterval(() => {
      for (const [s, rest] of this.pending) {
        if (s.destroyed || rest.length === 0) this.pending.delete(s);
        else {
          s.write(rest.subarray(0, 1));
          this.pending.set(s, rest.subarray(1));
        }
      }
    }, 2000);
  }

  /** A POST whose headers arrive at once and whose body then trickles. */
  http(port: number, path: string, type: string): Promise<void> {
    const body = Buffer.from(JSON.stringify({ apiKey: '1:x', chatId: '1', msgText: 'x'.repeat(900) }));
    const s = connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
    return this.track(s, 'connect', () => {
      s.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      this.pending.set(s, body);
    });
  }

  /** A relay TLS connection that trickles its first message (a 1036-byte frame) after the handshake. */
  relay(port: number, id: ReturnType<typeof clientIdentity>): Promise<void> {
    const frame = encode({ type: 'joinRelayRequest', token: 't'.repeat(1016) });
    const s = tlsConnect({
      socket: connect({ port, host: '127.0.0.1', localAddress: ATTACKER }),
      cert: id.certPem,
      key: id.keyPem,
      ALPNProtocols: ['bep-relay'],
      rejectUnauthorized: false,
    });
    return this.track(s, 'secureConnect', () => this.pending.set(s, frame));
  }

  /** Resolves once the socket is established (and fed) or closed by the server. */
  private track(s: Socket, ready: string, feed: () => void): Promise<void> {
    this.sockets.push(s);
    s.on('error', () => {});
    s.on('data', () => {});
    return new Promise((resolve) => {
      s.once(ready, () => {
        feed();
        resolve();
      });
      s.once('close', () => resolve());
    });
  }

  held(): number {
    return this.sockets.filter((s) => !s.destroyed).length;
  }

  stop(): void {
    clearInterval(this.tick);
    for (const s of this.sockets) s.destroy();
  }
}

async function flood(port: number, relayPort: number): Promise<Flood> {
  const f = new Flood();
  const id = clientIdentity();
  // Batches keep the listen backlogs from overflowing; every slot a batch wins stays held.
  for (let i = 0; i < FLOOD; i += 50) {
    const batch: Promise<void>[] = [];
    for (let j = i; j < i + 50; j++) {
      if (j % 2 === 1) batch.push(f.relay(relayPort, id));
      else if (j % 4 === 0) batch.push(f.http(port, '/rest/api/v1/telegram', 'application/json'));
      else batch.push(f.http(port, '/plantuml/svg', 'text/plain'));
    }
    await Promise.all(batch);
  }
  return f;
}

async function metrics(dev: DevutilProcess): Promise<string> {
  return (await fetch(`${dev.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
}

function series(text: string, name: string): number {
  const m = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function upload(dev: DevutilProcess, key: string): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob(['uploaded while flooded\n'.repeat(100)], { type: 'text/plain' }), 'f.txt');
  return fetch(`${dev.url}/api/file/${key}`, {
    method: 'POST',
    body: form,
    signal: AbortSignal.timeout(ANSWER_MS),
  });
}

describe('connection flood under a 600-fd limit', { skip: toolSkip('prlimit') }, () => {
  it('serves /healthz and an upload from another address within 2 s while 1000 slow connections come from one', async () => {
    const { dev, relayPort } = await start({});
    let f: Flood | undefined;
    try {
      const before = await metrics(dev);
      // The total cap came from the 600-fd limit the process really has: (600 - 64) / 3.
      assert.equal(series(before, 'devutil_connections_limit{scope="total"}'), 178);
      assert.equal(series(before, 'devutil_connections_limit{scope="client"}'), 64);

      f = await flood(dev.port, relayPort);

      const health = await fetch(`${dev.url}/healthz`, { signal: AbortSignal.timeout(ANSWER_MS) });
      assert.equal(health.status, 200);
      const up = await upload(dev, 'during-flood');
      assert.equal(up.status, 200);
      assert.equal((await up.json()).success, true);

      const after = await metrics(dev);
      const open =
        series(after, 'devutil_connections_open{listener="http"}') +
        series(after, 'devutil_connections_open{listener="relay"}');
      assert.ok(open <= 64 + 2, `${open} connections open; the attacker's share is 64`);
      assert.ok(series(after, 'devutil_connections_refused_total{listener="http",reason="client"}') > 0);
      assert.ok(series(after, 'devutil_connections_refused_total{listener="relay",reason="client"}') > 0);
      assert.ok(f.held() > 0, 'the attacker holds its share of slow connections');
      assert.doesNotMatch(dev.output(), /EMFILE|too many open files/i);
    } finally {
      f?.stop();
      await dev.stop();
    }
  });

  it('with the per-client cap off, keeps the process below its fd limit and serves again when the flood ends', async () => {
    const { dev, relayPort } = await start({ DEVUTIL_MAX_CONNECTIONS_PER_CLIENT: '0' });
    let f: Flood | undefined;
    try {
      f = await flood(dev.port, relayPort);
      const fds = readdirSync(`/proc/${dev.proc.pid}/fd`).length;
      assert.ok(fds < FD_LIMIT - 64, `${fds} descriptors open under a limit of ${FD_LIMIT}`);
      f.stop();
      // The total is full until the server sees the flood's sockets close.
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        status = await fetch(`${dev.url}/healthz`, { signal: AbortSignal.timeout(ANSWER_MS) }).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status, 200);
      assert.equal((await upload(dev, 'after-flood')).status, 200);
      const m = await metrics(dev);
      assert.ok(series(m, 'devutil_connections_refused_total{listener="http",reason="total"}') > 0);
      assert.doesNotMatch(dev.output(), /EMFILE|too many open files/i);
    } finally {
      f?.stop();
      await dev.stop();
    }
  });
});

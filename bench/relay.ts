// Syncthing relay: devutil's relay vs strelaysrv (Debian syncthing-relaysrv) driven by the same
// raw-protocol client in one run: one session's throughput, 16 concurrent sessions, CPU seconds
// per GiB proxied, and RSS with 1,000 idle joined clients. Targets (issue 15): throughput >= 1.0x,
// CPU/GiB <= 1.3x.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ClientIdentity,
  clientIdentity,
  joinRelay,
  joinSession,
  type MessageStream,
  requestSession,
} from '../src/services/relay/client.ts';
import type { Message } from '../src/services/relay/protocol/messages.ts';
import { freePort } from '../test/helpers/ports.ts';
import { cpuSecondsOf, header, median, report, requireCommand, rssOf, startDevutil } from './lib.ts';

const H = '127.0.0.1';
const MiB = 1024 * 1024;
const SINGLE_BYTES = Number(process.env['BENCH_RELAY_MIB'] ?? 1024) * MiB;
const SESSIONS = 16;
const IDLE_CLIENTS = Number(process.env['BENCH_RELAY_IDLE'] ?? 1000);
/** Throughput rounds, alternating the two relays so load drift on a shared box hits both alike. */
const ROUNDS = Number(process.env['BENCH_RELAY_ROUNDS'] ?? 3);

type Throughput = { singleMBps: number; multiMBps: number; cpuPerGiB: number };
function medians(rs: Throughput[]): Throughput {
  return {
    singleMBps: median(rs.map((r) => r.singleMBps)),
    multiMBps: median(rs.map((r) => r.multiMBps)),
    cpuPerGiB: median(rs.map((r) => r.cpuPerGiB)),
  };
}

interface Target {
  name: string;
  port: number;
  pid: number;
  close(): Promise<void>;
}

async function waitPort(port: number, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host: H, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} did not open`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startStrelaysrv(): Promise<Target> {
  requireCommand('strelaysrv', 'syncthing-relaysrv');
  const port = await freePort();
  const keys = mkdtempSync(join(tmpdir(), 'devutil-strelaysrv-'));
  const proc: ChildProcess = spawn(
    'strelaysrv',
    [
      '-listen',
      `${H}:${port}`,
      '-keys',
      keys,
      '-pools=',
      '-status-srv=',
      '-ping-interval=1m',
      '-network-timeout=2m',
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  await waitPort(port);
  return {
    name: 'strelaysrv',
    port,
    pid: proc.pid ?? 0,
    close: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(keys, { recursive: true, force: true });
    },
  };
}

async function startDevutilRelay(): Promise<Target> {
  const port = await freePort();
  const p = await startDevutil({
    DEVUTIL_RELAY_ENABLED: 'true',
    DEVUTIL_RELAY_HOST: H,
    DEVUTIL_RELAY_PORT: String(port),
    DEVUTIL_RELAY_STATUS_PORT: '0',
    DEVUTIL_LOG_LEVEL: 'error',
  });
  await waitPort(port);
  return { name: 'devutil', port, pid: p.pid, close: p.close };
}

function invitation(m: Message): Extract<Message, { type: 'sessionInvitation' }> {
  if (m.type !== 'sessionInvitation') throw new Error(`expected an invitation, got ${JSON.stringify(m)}`);
  return m;
}

/** One session: a joined server side and a requesting client side; resolves to the two pipe ends. */
async function openSession(t: Target, server: { id: ClientIdentity; stream: MessageStream }) {
  const requester = clientIdentity();
  const client = invitation(await requestSession(H, t.port, requester, server.id.raw));
  const srv = invitation(await server.stream.next());
  const a = await joinSession(H, t.port, srv.key);
  const b = await joinSession(H, t.port, client.key);
  return { a, b };
}

/** Sends `total` bytes from a to b as fast as back-pressure allows; resolves when b has them all. */
function transfer(a: import('node:net').Socket, b: import('node:net').Socket, total: number): Promise<void> {
  const chunk = Buffer.alloc(256 * 1024, 0x5a);
  return new Promise((resolve, reject) => {
    let got = 0;
    b.on('data', (d: Buffer) => {
      got += d.length;
      if (got >= total) resolve();
    });
    b.on('error', reject);
    // A relay that drops the session must fail the round, not hang it.
    b.on('close', () => {
      if (got < total) reject(new Error(`session closed after ${got} of ${total} bytes`));
    });
    b.resume();
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        if (!a.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          a.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

/** RSS with IDLE_CLIENTS joined clients (after the throughput rounds). */
async function measureIdle(t: Target) {
  const ids = Array.from({ length: IDLE_CLIENTS }, () => clientIdentity()); // keygen not measured
  await new Promise((r) => setTimeout(r, 500));
  const rss0 = rssOf(t.pid);
  const idle: MessageStream[] = [];
  let failed = 0;
  for (let i = 0; i < ids.length; i += 50) {
    const batch = await Promise.allSettled(ids.slice(i, i + 50).map((id) => joinRelay(H, t.port, id)));
    for (const j of batch) {
      if (j.status === 'fulfilled' && j.value.reply.type === 'response' && j.value.reply.code === 0)
        idle.push(j.value.stream);
      else failed++;
    }
  }
  await new Promise((r) => setTimeout(r, 1000));
  const rss = rssOf(t.pid);
  if (failed) console.log(`${t.name}: ${failed} of ${IDLE_CLIENTS} idle joins failed`);
  for (const s of idle) s.close();
  await new Promise((r) => setTimeout(r, 500));
  return { rss, rssDelta: rss - rss0, failed };
}

async function measure(t: Target) {
  const joined: { id: ClientIdentity; stream: MessageStream }[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const id = clientIdentity();
    const j = await joinRelay(H, t.port, id);
    if (j.reply.type !== 'response' || j.reply.code !== 0) throw new Error(`${t.name}: join refused`);
    joined.push({ id, stream: j.stream });
  }
  // Warm-up (JIT, socket buffers), not measured.
  const w = await openSession(t, joined[0] as (typeof joined)[0]);
  await transfer(w.a, w.b, 64 * MiB);
  w.a.destroy();
  w.b.destroy();

  const cpu0 = cpuSecondsOf(t.pid);
  const one = await openSession(t, joined[0] as (typeof joined)[0]);
  let t0 = performance.now();
  await transfer(one.a, one.b, SINGLE_BYTES);
  const singleMBps = SINGLE_BYTES / MiB / ((performance.now() - t0) / 1000);
  one.a.destroy();
  one.b.destroy();

  const per = Math.floor(SINGLE_BYTES / SESSIONS);
  const pairs = await Promise.all(joined.map((j) => openSession(t, j)));
  t0 = performance.now();
  await Promise.all(pairs.map((p) => transfer(p.a, p.b, per)));
  const multiMBps = (per * SESSIONS) / MiB / ((performance.now() - t0) / 1000);
  const cpu = cpuSecondsOf(t.pid) - cpu0;
  for (const p of pairs) {
    p.a.destroy();
    p.b.destroy();
  }
  for (const j of joined) j.stream.close();
  const gib = (SINGLE_BYTES + per * SESSIONS) / (1024 * MiB);

  return { singleMBps, multiMBps, cpuPerGiB: cpu / gib };
}

header('Syncthing relay: devutil vs strelaysrv');
const strelay = await startStrelaysrv();
const dev = await startDevutilRelay();
try {
  const rs: Throughput[] = [];
  const rd: Throughput[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    rs.push(await measure(strelay));
    rd.push(await measure(dev));
  }
  const idleS = await measureIdle(strelay);
  const idleD = await measureIdle(dev);
  // Context: one more round after the 1,000-client churn (V8 GC heuristics change after it).
  const afterS = await measure(strelay);
  const afterD = await measure(dev);
  const idleInvalid =
    idleS.failed || idleD.failed
      ? `idle joins failed: strelaysrv ${idleS.failed}, devutil ${idleD.failed}`
      : undefined;
  const s = { ...idleS, ...medians(rs) };
  const d = { ...idleD, ...medians(rd) };
  const fmtRuns = (xs: Throughput[]) =>
    xs
      .map((x) => `${x.singleMBps.toFixed(0)}/${x.multiMBps.toFixed(0)}/${x.cpuPerGiB.toFixed(2)}`)
      .join('  ');
  console.log(`rounds (1-session MiB/s / ${SESSIONS}-session MiB/s / CPU s per GiB), medians reported:`);
  console.log(`  strelaysrv ${fmtRuns(rs)}`);
  console.log(`  devutil    ${fmtRuns(rd)}`);
  report(`Syncthing relay, raw-protocol client on loopback (median of ${ROUNDS})`, 'strelaysrv', [
    {
      metric: '1 session throughput',
      unit: 'MiB/s',
      devutil: d.singleMBps,
      anchor: s.singleMBps,
      higherIsBetter: true,
      target: 1.0,
    },
    {
      metric: `${SESSIONS} sessions throughput`,
      unit: 'MiB/s',
      devutil: d.multiMBps,
      anchor: s.multiMBps,
      higherIsBetter: true,
      target: 1.0,
    },
    {
      metric: 'CPU per GiB proxied',
      unit: 's',
      devutil: d.cpuPerGiB,
      anchor: s.cpuPerGiB,
      higherIsBetter: false,
      target: 1.3,
    },
    {
      metric: `RSS, ${IDLE_CLIENTS} idle joined`,
      unit: 'MiB',
      devutil: d.rss / MiB,
      anchor: s.rss / MiB,
      higherIsBetter: false,
      invalid: idleInvalid,
    },
    {
      metric: `RSS growth, ${IDLE_CLIENTS} idle`,
      unit: 'MiB',
      devutil: d.rssDelta / MiB,
      anchor: s.rssDelta / MiB,
      higherIsBetter: false,
      invalid: idleInvalid,
    },
  ]);
  console.log('(devutil RSS is the whole devutil process: HTTP utilities included)');
  report(`after ${IDLE_CLIENTS} clients joined and left`, 'strelaysrv', [
    {
      metric: '1 session throughput',
      unit: 'MiB/s',
      devutil: afterD.singleMBps,
      anchor: afterS.singleMBps,
      higherIsBetter: true,
    },
    {
      metric: `${SESSIONS} sessions throughput`,
      unit: 'MiB/s',
      devutil: afterD.multiMBps,
      anchor: afterS.multiMBps,
      higherIsBetter: true,
    },
    {
      metric: 'CPU per GiB proxied',
      unit: 's',
      devutil: afterD.cpuPerGiB,
      anchor: afterS.cpuPerGiB,
      higherIsBetter: false,
    },
  ]);
} finally {
  await dev.close();
  await strelay.close();
}

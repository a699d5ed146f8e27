// Answers that are already bytes, served by the fast lane (src/infra/http/fast-lane.ts): the caller
// IP, a cached 80 px identicon avatar, a cached Kroki diagram, a cached PlantUML diagram, a 4 KiB
// proxy hit and a 64 KiB npm tarball hit, each against a bare node:http server sending the same bytes (same runtime) and nginx serving
// them as a static file. The bare server sends the same head too: the header lines devutil sent for
// that answer (taken from one of its answers, sent verbatim each time), its body with
// `res.writeHead(200, headers); res.end(body)`; node:http adds Date, Connection and Keep-Alive to both.
// BENCH_HITS_BARE_HEAD=minimal gives it only Content-Type and Content-Length (how this bench measured before: the
// heads then differ by up to ~500 bytes per answer). nginx sends its own head (~230 bytes). One devutil with its defaults (byte budget on; rate limits off, as in the
// other benches), the upstreams a local stand-in (test/fixtures/proxy/internet.ts). Rounds
// alternate the three servers row by row so load drift on a shared machine hits all alike; medians
// are reported, and each server's CPU per request (user+system of its own process, from /proc: on a
// busy machine steadier than req/s; nginx is left out there, its workers being other processes).
// Targets (issue 35): >= 0.9x bare node for the IP, the avatar, diagrams and the proxy hit,
// >= 0.6x nginx for all (the npm hit is measured against nginx only as its target).
// The CPU line also gives the medians of user and kernel time per answer: two servers making the
// same system calls for the same bytes differ in the first.
//   BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (3, per row and server),
//   BENCH_HITS_JAVA=0 leaves the PlantUML row out,
//   BENCH_HITS_BARE_HEAD=minimal (see above),
//   BENCH_HITS_ROWS=proxy,ip measures only the rows whose names contain one of these words
//   (case-insensitive; every row is still made once, so the process has served all of them).
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import plantumlEncoder from 'plantuml-encoder';
import { serveFile, startInternet } from '../test/fixtures/proxy/internet.ts';
import { freePort } from '../test/helpers/ports.ts';
import { tempDir } from '../test/helpers/server.ts';
import {
  cpuTimesOf,
  header,
  invalid,
  median,
  report,
  startDevutil,
  startNginx,
  type WrkResult,
  wrk,
} from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 5);
/**
 * Each row's warm-up per server (s): 1 s left devutil's hot paths still being compiled by V8 in the
 * measured rounds of later rows (TurboFan work on its helper threads, counted in its CPU).
 */
const warmupSec = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 3);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const JAVA = process.env['BENCH_HITS_JAVA'] !== '0';
const ONLY = (process.env['BENCH_HITS_ROWS'] ?? '')
  .split(',')
  .map((w) => w.trim().toLowerCase())
  .filter(Boolean);
const MINIMAL_HEAD = process.env['BENCH_HITS_BARE_HEAD'] === 'minimal';
const measured = (name: string) => ONLY.length === 0 || ONLY.some((w) => name.toLowerCase().includes(w));

header('answers that are bytes already (fast lane): devutil vs bare node:http vs nginx, same bytes');
const dir = tempDir('devutil-bench-hits-');
chmodSync(dir, 0o755); // nginx workers run unprivileged
const www = join(dir, 'www');
mkdirSync(www);
writeFileSync(join(www, 'wheel.whl'), Buffer.alloc(4096, 5));
writeFileSync(join(www, 'small-1.0.0.tgz'), Buffer.alloc(64 * 1024, 7));

const net = await startInternet(dir);
for (const host of ['registry.npmjs.org', 'files.pythonhosted.org'])
  net.on(host, (req, res, url) => serveFile(req, res, join(www, url.pathname.split('/').pop() ?? '')));
const dev = await startDevutil({
  DEVUTIL_LOG_LEVEL: 'error',
  DEVUTIL_PROXY_ECOSYSTEMS: 'npm',
  DEVUTIL_PROXY_RESOLVE: net.resolve.join(','),
  DEVUTIL_PROXY_UPSTREAM_CA: net.caFile,
  DEVUTIL_PROXY_RATE_LIMIT: '0',
  DEVUTIL_PROXY_MAX_CONCURRENT: '0',
  DEVUTIL_DIAGRAMS_RATE_LIMIT: 'off',
  DEVUTIL_DIAGRAMS_WORKERS: '1',
  // Identicons drawn here: no Gravatar stand-in to ask first.
  DEVUTIL_AVATAR_UPSTREAM: 'none',
});

interface Hit {
  name: string;
  path: string;
  connections: number;
  /** Target ratio against bare node, when the issue names one. */
  bare?: number;
  nginx: number;
}
const hits: Hit[] = [
  { name: 'caller IP', path: '/rest/api/v1/ip', connections: 64, bare: 0.9, nginx: 0.6 },
  {
    name: 'cached avatar (80 px)',
    path: '/avatar/0bc83cb571cd1c50ba6f3e8a78ef1346?d=identicon&s=80',
    connections: 64,
    bare: 0.9,
    nginx: 0.6,
  },
  {
    name: 'cached Kroki diagram',
    path: `/plantuml/graphviz/svg/${deflateSync('digraph { lane -> fast -> bytes }').toString('base64url')}`,
    connections: 64,
    bare: 0.9,
    nginx: 0.6,
  },
  ...(JAVA
    ? [
        {
          name: 'cached PlantUML diagram',
          path: `/plantuml/svg/${plantumlEncoder.encode('@startuml\nBob -> Alice : lane\n@enduml')}`,
          connections: 64,
          bare: 0.9,
          nginx: 0.6,
        },
      ]
    : []),
  {
    name: 'proxy hit (4 KiB)',
    path: '/proxy/files.pythonhosted.org/packages/bench/wheel.whl',
    connections: 64,
    bare: 0.9,
    nginx: 0.6,
  },
  {
    name: 'npm tarball hit (64 KiB)',
    path: '/proxy/npm/small/-/small-1.0.0.tgz',
    connections: 32,
    nginx: 0.6,
  },
];

// Each answer as devutil sends it: the anchors send these bytes, the bare server with the same header
// lines (node:http writes Date, Connection and Keep-Alive itself; Content-Length is given, or writeHead
// would choose chunked encoding).
const OWN_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
const served: Record<string, { type: string; file: string; headers: Record<string, string> }> = {};
for (const [i, h] of hits.entries()) {
  let r: Response | undefined;
  // Rendered or fetched, then hits: the lane repeats a hit the router answered.
  for (let n = 0; n < 4; n++) {
    r = await fetch(dev.url + h.path);
    if (r.status !== 200) throw new Error(`${h.name}: ${r.status} ${(await r.text()).slice(0, 300)}`);
    if (n < 3) await r.arrayBuffer();
  }
  const body = Buffer.from(await (r as Response).arrayBuffer());
  const file = `hit${i}`;
  writeFileSync(join(www, file), body);
  const type = (r as Response).headers.get('content-type') ?? 'application/octet-stream';
  const headers: Record<string, string> = { 'content-type': type, 'content-length': String(body.length) };
  if (!MINIMAL_HEAD)
    (r as Response).headers.forEach((v, k) => {
      if (!OWN_HEADERS.has(k)) headers[k] = v;
    });
  served[h.path] = { type, file, headers };
}
const barePort = await freePort();
const script = join(dir, 'bare.cjs');
writeFileSync(
  script,
  `const fs = require('node:fs');
const map = new Map(Object.entries(${JSON.stringify(served)}).map(([p, v]) => [p, [v.headers, fs.readFileSync(${JSON.stringify(www)} + '/' + v.file)]]));
require('node:http').createServer((q, s) => {
  const a = map.get(q.url);
  if (!a) { s.statusCode = 404; s.end(); return; }
  s.writeHead(200, a[0]);
  s.end(a[1]);
}).listen(${barePort}, '127.0.0.1');
`,
);
const bareProc: ChildProcess = spawn(process.execPath, [script], { stdio: ['ignore', 'ignore', 'inherit'] });
const locations = hits
  // nginx matches the path alone (the avatar's query string is not part of a location).
  .map(
    (h, i) =>
      `location = ${h.path.split('?')[0]} { default_type "${served[h.path]?.type}"; alias ${www}/hit${i}; }`,
  )
  .join('\n');
const ngx = await startNginx(locations, '', hits[0]!.path);
for (let i = 0; i < 100; i++) {
  const ok = await fetch(`http://127.0.0.1:${barePort}${hits[0]!.path}`).then(
    (r) => r.status === 200,
    () => false,
  );
  if (ok) break;
  await new Promise((r) => setTimeout(r, 100));
}

/** The size of the head one server sends for `path` (status line to the blank line). */
function headBytes(base: string, path: string): Promise<number> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname);
    let got = Buffer.alloc(0);
    sock.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (end >= 0) {
        sock.destroy();
        resolve(end + 4);
      }
    });
    sock.on('error', reject);
    sock.write(`GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`);
  });
}

const servers = [
  { name: 'devutil', url: dev.url, pid: dev.pid },
  { name: 'bare', url: `http://127.0.0.1:${barePort}`, pid: bareProc.pid ?? 0 },
  { name: 'nginx', url: ngx.url, pid: ngx.pid },
];
try {
  const byBare: Parameters<typeof report>[2] = [];
  const byNginx: Parameters<typeof report>[2] = [];
  const byCpu: Parameters<typeof report>[2] = [];
  for (const h of hits) {
    if (!measured(h.name)) continue;
    const runs: Record<string, WrkResult[]> = { devutil: [], bare: [], nginx: [] };
    /** Microseconds of the server process's CPU per answer, per round (devutil and bare). */
    const cpu: Record<string, number[]> = { devutil: [], bare: [] };
    /** The same, user and kernel time apart. */
    const user: Record<string, number[]> = { devutil: [], bare: [] };
    const system: Record<string, number[]> = { devutil: [], bare: [] };
    const heads = await Promise.all(servers.map((s) => headBytes(s.url, h.path)));
    console.log(`${h.name}: head bytes ${servers.map((s, i) => `${s.name} ${heads[i]}`).join(', ')}`);
    for (const s of servers) wrk(s.url + h.path, { durationSec: warmupSec, connections: h.connections });
    for (let i = 0; i < ROUNDS; i++)
      for (const s of i % 2 ? [...servers].reverse() : servers) {
        const before = s.name in cpu ? cpuTimesOf(s.pid) : null;
        const r = wrk(s.url + h.path, { durationSec, connections: h.connections });
        runs[s.name]!.push(r);
        if (before && r.requests > 0) {
          const after = cpuTimesOf(s.pid);
          const per = (a: number, b: number) => ((a - b) / r.requests) * 1e6;
          user[s.name]!.push(per(after.user, before.user));
          system[s.name]!.push(per(after.system, before.system));
          cpu[s.name]!.push(per(after.user + after.system, before.user + before.system));
        }
      }
    const rps = (n: string) => median(runs[n]!.map((r) => r.rps));
    console.log(
      `${h.name}: req/s rounds ${servers.map((s) => `${s.name} ${runs[s.name]!.map((r) => r.rps.toFixed(0)).join('/')}`).join('; ')}`,
    );
    byBare.push({
      metric: h.name,
      unit: 'req/s',
      devutil: rps('devutil'),
      anchor: rps('bare'),
      higherIsBetter: true,
      ...(h.bare ? { target: h.bare } : {}),
      invalid: invalid({ devutil: runs['devutil'], bare: runs['bare'] }),
    });
    console.log(
      `${h.name}: CPU us/answer rounds ${['devutil', 'bare'].map((n) => `${n} ${cpu[n]!.map((v) => v.toFixed(1)).join('/')} (median user ${median(user[n]!).toFixed(1)}, system ${median(system[n]!).toFixed(1)})`).join('; ')}`,
    );
    byCpu.push({
      metric: h.name,
      unit: 'us CPU',
      devutil: median(cpu['devutil']!),
      anchor: median(cpu['bare']!),
      higherIsBetter: false,
      // >= 0.9x bare's throughput per CPU: at most 1/0.9 of its CPU per answer.
      ...(h.bare ? { target: Number((1 / h.bare).toFixed(2)) } : {}),
      invalid: invalid({ devutil: runs['devutil'], bare: runs['bare'] }),
    });
    byNginx.push({
      metric: h.name,
      unit: 'req/s',
      devutil: rps('devutil'),
      anchor: rps('nginx'),
      higherIsBetter: true,
      target: h.nginx,
      invalid: invalid({ devutil: runs['devutil'], nginx: runs['nginx'] }),
    });
  }
  report(`hits vs bare node:http sending the same bytes (median of ${ROUNDS})`, 'bare node', byBare);
  report(`CPU per answer vs bare node:http (median of ${ROUNDS})`, 'bare node', byCpu);
  report(`hits vs nginx serving the same bytes as a file (median of ${ROUNDS})`, 'nginx', byNginx);
} finally {
  bareProc.kill();
  await dev.close();
  await ngx.close();
  await net.close();
}

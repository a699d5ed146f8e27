// Caller IP: devutil's /rest/api/v1/ip vs nginx answering the same JSON with `return 200`, and vs a
// bare node:http server answering it on the same runtime (Node's own ceiling), all single-process
// with access logs off, same wrk load. Rounds alternate the three (BENCH_ROUNDS) so load drift on a
// shared machine hits all alike; medians are reported. Targets (issue 15): >= 0.5x nginx req/s and
// >= 0.8x bare node:http. CPU per request of each server is printed too: on a busy machine it moves
// less than req/s does.
import { spawn } from 'node:child_process';
import { freePort } from '../test/helpers/ports.ts';
import {
  header,
  invalid,
  median,
  report,
  saturation,
  startDevutil,
  startNginx,
  treeCpuSeconds,
  type WrkResult,
  wrk,
} from './lib.ts';

const body = '{"status":1,"message":"success","data":{"ip":"127.0.0.1"}}';
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 5);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = 64;

header('GET /rest/api/v1/ip: devutil vs nginx `return 200` vs bare node:http');
const dev = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error' });
// The same server with the fast lane off: every answer through Fastify's routing and hooks.
const slow = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error', DEVUTIL_FAST_LANE: 'false' });
const ngx = await startNginx(
  `location = /rest/api/v1/ip { default_type application/json; return 200 '${body}'; }`,
  '',
  '/rest/api/v1/ip',
);
const barePort = await freePort();
const bare = spawn(process.execPath, [
  '-e',
  `require('http').createServer((q,s)=>{s.setHeader('content-type','application/json');s.end('${body}')}).listen(${barePort},'127.0.0.1')`,
]);
await new Promise((r) => setTimeout(r, 500));

const targets = [
  { name: 'devutil', url: `${dev.url}/rest/api/v1/ip`, pid: dev.pid, key: 'devutil' },
  { name: 'no-lane', url: `${slow.url}/rest/api/v1/ip`, pid: slow.pid, key: 'devutil' },
  { name: 'nginx', url: `${ngx.url}/rest/api/v1/ip`, pid: ngx.pid, key: 'anchor' },
  { name: 'bare', url: `http://127.0.0.1:${barePort}/rest/api/v1/ip`, pid: bare.pid ?? 0, key: 'anchor' },
];
type Run = WrkResult & { usPerReq: number };
const runs: Record<string, Run[]> = { devutil: [], 'no-lane': [], nginx: [], bare: [] };
/** The round whose req/s is the median: its saturation line stands for the set. */
const medianRun = (rs: Run[]) => rs.find((r) => r.rps === median(rs.map((x) => x.rps))) ?? (rs[0] as Run);
try {
  for (const t of targets) wrk(t.url, { durationSec: 2, connections }); // warm (JIT, connections)
  for (let i = 0; i < ROUNDS; i++) {
    for (const t of i % 2 ? [...targets].reverse() : targets) {
      const c0 = treeCpuSeconds(t.pid);
      const r = wrk(t.url, { durationSec, connections, watch: { [t.key]: t.pid } });
      const usPerReq = ((treeCpuSeconds(t.pid) - c0) / Math.max(1, r.requests)) * 1e6;
      runs[t.name]?.push({ ...r, usPerReq });
    }
  }
  const rs = (name: string) => runs[name] ?? [];
  const m = (name: string, k: 'rps' | 'p50ms' | 'p99ms' | 'usPerReq') => median(rs(name).map((r) => r[k]));
  console.log('rounds (req/s / server CPU µs per request), medians reported:');
  for (const t of targets)
    console.log(
      `  ${t.name.padEnd(8)} ${rs(t.name)
        .map((r) => `${r.rps.toFixed(0)}/${r.usPerReq.toFixed(1)}`)
        .join('  ')}`,
    );
  const bad = invalid({ devutil: rs('devutil'), nginx: rs('nginx') });
  report(`GET /rest/api/v1/ip (median of ${ROUNDS})`, 'nginx', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: m('devutil', 'rps'),
      anchor: m('nginx', 'rps'),
      higherIsBetter: true,
      target: 0.5,
      invalid: bad,
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: m('devutil', 'p99ms'),
      anchor: m('nginx', 'p99ms'),
      higherIsBetter: false,
      invalid: bad,
    },
    {
      metric: 'p50 latency',
      unit: 'ms',
      devutil: m('devutil', 'p50ms'),
      anchor: m('nginx', 'p50ms'),
      higherIsBetter: false,
      invalid: bad,
    },
    {
      metric: 'CPU per request',
      unit: 'µs',
      devutil: m('devutil', 'usPerReq'),
      anchor: m('nginx', 'usPerReq'),
      higherIsBetter: false,
    },
  ]);
  console.log(saturation(medianRun(rs('devutil')), medianRun(rs('nginx')), 'nginx'));
  report(`GET /rest/api/v1/ip vs bare node:http, same JSON (median of ${ROUNDS})`, 'bare node', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: m('devutil', 'rps'),
      anchor: m('bare', 'rps'),
      higherIsBetter: true,
      target: 0.8,
      invalid: invalid({ devutil: rs('devutil'), bare: rs('bare') }),
    },
    {
      metric: 'CPU per request',
      unit: 'µs',
      devutil: m('devutil', 'usPerReq'),
      anchor: m('bare', 'usPerReq'),
      higherIsBetter: false,
    },
  ]);
  console.log(saturation(medianRun(rs('devutil')), medianRun(rs('bare')), 'bare node'));
} finally {
  await dev.close();
  await slow.close();
  await ngx.close();
  bare.kill();
}

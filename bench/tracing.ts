// Tracing's cost on a hot route (GET /rest/api/v1/ip, the cheapest answer devutil gives): devutil
// with tracing off (the default) against devutil tracing every request (always_on, exported as OTLP
// JSON to a sink in this process) and tracing configured but sampling nothing (always_off). With
// BENCH_BASELINE_DIR (a checkout of the commit before tracing, with its node_modules) the same
// route of that build runs beside them: off must cost nothing against it. Rounds alternate the
// targets (BENCH_ROUNDS) so load drift hits all alike; medians are reported with server CPU per
// request, which a busy machine moves less than req/s.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { stopChild, waitHttp } from '../test/helpers/nginx.ts';
import { freePort } from '../test/helpers/ports.ts';
import { tempDir } from '../test/helpers/server.ts';
import {
  header,
  invalid,
  median,
  type Proc,
  report,
  startDevutil,
  treeCpuSeconds,
  type WrkResult,
  wrk,
} from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 5);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = 64;
const baselineDir = process.env['BENCH_BASELINE_DIR'];

header('GET /rest/api/v1/ip: tracing off vs on (always_on, exported) vs on (always_off)');
// The collector stand-in runs in its own process: wrk runs synchronously here, and a sink in this
// process could not answer meanwhile (the exporter would time out and drop).
const sinkPort = await freePort();
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
const sink = spawn(
  process.execPath,
  [
    '-e',
    `let n=0;require('node:http').createServer((q,s)=>{if(q.method==='GET'){s.end(String(n));return}` +
      `q.resume();q.on('end',()=>{n++;s.writeHead(200,{'content-type':'application/json'});s.end('{}')})})` +
      `.listen(${sinkPort},'127.0.0.1')`,
  ],
  { stdio: 'ignore' },
);
await waitHttp(sinkUrl, 10_000);
/** Only these targets (BENCH_TARGETS=off,baseline), default all. */
const only = process.env['BENCH_TARGETS']?.split(',');

/** A devutil started from another checkout (the baseline build), same settings as startDevutil. */
async function startFrom(dir: string): Promise<Proc> {
  const port = await freePort();
  const data = tempDir();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, [join(dir, 'bin/devutil.js'), 'serve'], {
    cwd: dir,
    stdio: 'ignore',
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_PUBLIC_URL: url,
      DEVUTIL_DATA_DIR: data,
      DEVUTIL_LOG_LEVEL: 'error',
      DEVUTIL_RELAY_ENABLED: 'false',
      DEVUTIL_MAX_CONNECTIONS_PER_CLIENT: '0',
    },
  });
  await waitHttp(`${url}/healthz`, 60_000);
  return { url, port, pid: proc.pid ?? 0, close: () => stopChild(proc, data) };
}

const procs: Proc[] = [];
try {
  const want = (name: string) => !only || only.includes(name);
  const off = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error' });
  procs.push(off);
  const on = !want('on')
    ? undefined
    : await startDevutil({
        DEVUTIL_LOG_LEVEL: 'error',
        OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_BSP_SCHEDULE_DELAY: '200',
      });
  if (on) procs.push(on);
  const unsampled = !want('unsampled')
    ? undefined
    : await startDevutil({
        DEVUTIL_LOG_LEVEL: 'error',
        OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
        OTEL_TRACES_SAMPLER: 'always_off',
      });
  if (unsampled) procs.push(unsampled);
  const base = baselineDir && want('baseline') ? await startFrom(baselineDir) : undefined;
  if (base) procs.push(base);

  const targets = [
    { name: 'off', p: off },
    ...(on ? [{ name: 'on', p: on }] : []),
    ...(unsampled ? [{ name: 'unsampled', p: unsampled }] : []),
    ...(base ? [{ name: 'baseline', p: base }] : []),
  ];
  type Run = WrkResult & { usPerReq: number };
  const runs: Record<string, Run[]> = {};
  for (const t of targets) wrk(`${t.p.url}/rest/api/v1/ip`, { durationSec: 2, connections }); // warm
  for (let i = 0; i < ROUNDS; i++) {
    for (const t of i % 2 ? [...targets].reverse() : targets) {
      const c0 = treeCpuSeconds(t.p.pid);
      const r = wrk(`${t.p.url}/rest/api/v1/ip`, { durationSec, connections, watch: { [t.name]: t.p.pid } });
      const usPerReq = ((treeCpuSeconds(t.p.pid) - c0) / Math.max(1, r.requests)) * 1e6;
      const list = runs[t.name] ?? [];
      list.push({ ...r, usPerReq });
      runs[t.name] = list;
    }
  }
  const rs = (name: string) => runs[name] ?? [];
  const m = (name: string, k: 'rps' | 'p99ms' | 'usPerReq') => median(rs(name).map((r) => r[k]));
  console.log('rounds (req/s / server CPU µs per request), medians reported:');
  for (const t of targets)
    console.log(
      `  ${t.name.padEnd(10)} ${rs(t.name)
        .map((r) => `${r.rps.toFixed(0)}/${r.usPerReq.toFixed(1)}`)
        .join('  ')}`,
    );
  console.log(`exports received by the collector stand-in: ${await (await fetch(sinkUrl)).text()}`);
  const rows = (name: string) => [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: m(name, 'rps'),
      anchor: m('off', 'rps'),
      higherIsBetter: true,
      invalid: invalid({ [name]: rs(name), off: rs('off') }),
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: m(name, 'p99ms'),
      anchor: m('off', 'p99ms'),
      higherIsBetter: false,
    },
    {
      metric: 'CPU per request',
      unit: 'µs',
      devutil: m(name, 'usPerReq'),
      anchor: m('off', 'usPerReq'),
      higherIsBetter: false,
    },
  ];
  if (on)
    report(`tracing on (every request traced and exported) vs off (median of ${ROUNDS})`, 'off', rows('on'));
  if (unsampled)
    report(`tracing on, sampling nothing vs off (median of ${ROUNDS})`, 'off', rows('unsampled'));
  if (base)
    report(`before tracing (BENCH_BASELINE_DIR) vs off: the off path's cost`, 'off', rows('baseline'));
} finally {
  for (const p of procs) await p.close();
  sink.kill();
}

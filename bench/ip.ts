// Caller IP: devutil's /rest/api/v1/ip vs nginx answering the same JSON with `return 200`, both
// single-process with access logs off, same wrk load. Target: devutil >= 0.5x nginx req/s.
import { spawn } from 'node:child_process';
import { freePort } from '../test/helpers/ports.ts';
import { report, startDevutil, startNginx, wrk } from './lib.ts';

const body = '{"status":1,"message":"success","data":{"ip":"127.0.0.1"}}';
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = 64;

const dev = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error' });
const ngx = await startNginx(
  `location = /rest/api/v1/ip { default_type application/json; return 200 '${body}'; }`,
  '',
  '/rest/api/v1/ip',
);
// Context, not a target: the same JSON from a bare node:http server is Node's own ceiling here.
const barePort = await freePort();
const bare = spawn(process.execPath, [
  '-e',
  `require('http').createServer((q,s)=>{s.setHeader('content-type','application/json');s.end('${body}')}).listen(${barePort},'127.0.0.1')`,
]);
await new Promise((r) => setTimeout(r, 500));
const bareUrl = `http://127.0.0.1:${barePort}/rest/api/v1/ip`;
try {
  // Warm both (JIT, connection setup) before measuring.
  wrk(`${dev.url}/rest/api/v1/ip`, { durationSec: 2, connections });
  wrk(`${ngx.url}/rest/api/v1/ip`, { durationSec: 2, connections });
  const d = wrk(`${dev.url}/rest/api/v1/ip`, { durationSec, connections });
  const n = wrk(`${ngx.url}/rest/api/v1/ip`, { durationSec, connections });
  wrk(bareUrl, { durationSec: 2, connections });
  const b = wrk(bareUrl, { durationSec, connections });
  report('GET /rest/api/v1/ip', 'nginx', [
    { metric: 'throughput', unit: 'req/s', devutil: d.rps, anchor: n.rps, higherIsBetter: true, target: 0.5 },
    { metric: 'p99 latency', unit: 'ms', devutil: d.p99ms, anchor: n.p99ms, higherIsBetter: false },
    { metric: 'p50 latency', unit: 'ms', devutil: d.p50ms, anchor: n.p50ms, higherIsBetter: false },
  ]);
  report('context: bare node:http, same JSON', 'nginx', [
    { metric: 'throughput', unit: 'req/s', devutil: b.rps, anchor: n.rps, higherIsBetter: true },
  ]);
  console.log(`devutil / bare node:http: ${(d.rps / b.rps).toFixed(2)}x`);
  if (d.errors || n.errors) console.log(`errors: devutil ${d.errors}, nginx ${n.errors}`);
} finally {
  await dev.close();
  await ngx.close();
  bare.kill();
}

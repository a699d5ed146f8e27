// Caller IP: devutil's /rest/api/v1/ip vs nginx answering the same JSON with `return 200`, both
// single-process with access logs off, same wrk load. Targets (issue 15): >= 0.5x nginx req/s and
// >= 0.8x of a bare node:http server answering the same JSON on the same runtime.
import { spawn } from 'node:child_process';
import { freePort } from '../test/helpers/ports.ts';
import { invalid, report, saturation, startDevutil, startNginx, wrk } from './lib.ts';

const body = '{"status":1,"message":"success","data":{"ip":"127.0.0.1"}}';
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = 64;

const dev = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error' });
const ngx = await startNginx(
  `location = /rest/api/v1/ip { default_type application/json; return 200 '${body}'; }`,
  '',
  '/rest/api/v1/ip',
);
// The same JSON from a bare node:http server: the runtime's own ceiling here.
const barePort = await freePort();
const bare = spawn(process.execPath, [
  '-e',
  `require('http').createServer((q,s)=>{s.setHeader('content-type','application/json');s.end('${body}')}).listen(${barePort},'127.0.0.1')`,
]);
await new Promise((r) => setTimeout(r, 500));
const bareUrl = `http://127.0.0.1:${barePort}/rest/api/v1/ip`;
try {
  // Warm all three (JIT, connection setup) before measuring.
  for (const u of [`${dev.url}/rest/api/v1/ip`, `${ngx.url}/rest/api/v1/ip`, bareUrl])
    wrk(u, { durationSec: 2, connections });
  const d = wrk(`${dev.url}/rest/api/v1/ip`, { durationSec, connections, watch: { devutil: dev.pid } });
  const n = wrk(`${ngx.url}/rest/api/v1/ip`, { durationSec, connections, watch: { anchor: ngx.pid } });
  const b = wrk(bareUrl, { durationSec, connections, watch: { anchor: bare.pid ?? 0 } });
  const bad = invalid({ devutil: d, nginx: n });
  report('GET /rest/api/v1/ip', 'nginx', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: d.rps,
      anchor: n.rps,
      higherIsBetter: true,
      target: 0.5,
      invalid: bad,
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: d.p99ms,
      anchor: n.p99ms,
      higherIsBetter: false,
      invalid: bad,
    },
    {
      metric: 'p50 latency',
      unit: 'ms',
      devutil: d.p50ms,
      anchor: n.p50ms,
      higherIsBetter: false,
      invalid: bad,
    },
  ]);
  console.log(saturation(d, n, 'nginx'));
  report('GET /rest/api/v1/ip vs bare node:http, same JSON', 'bare node', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: d.rps,
      anchor: b.rps,
      higherIsBetter: true,
      target: 0.8,
      invalid: invalid({ devutil: d, bare: b }),
    },
  ]);
  console.log(saturation(d, b, 'bare node'));
} finally {
  await dev.close();
  await ngx.close();
  bare.kill();
}

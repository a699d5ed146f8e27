// Reverse proxy: devutil vs nginx proxy_pass to the same local HTTPS upstream (nginx serving files
// with a test-CA certificate for the real host names). 1 KiB req/s and p99 (target >= 0.5x),
// one 1 GiB stream (target >= 0.9x throughput, flat RSS), and cache hits vs nginx serving the
// file statically.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePki } from '../test/fixtures/proxy/tls.ts';
import { freePort } from '../test/helpers/ports.ts';
import { type Proc, report, rssOf, startDevutil, startNginx, wrk } from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = 64;
const HOSTS = ['raw.githubusercontent.com', 'files.pythonhosted.org'];

const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-proxy-'));
makePki(dir, HOSTS);
chmodSync(dir, 0o755); // nginx workers run unprivileged
const www = join(dir, 'www');
execFileSync('mkdir', ['-p', join(www, 'packages')]);
writeFileSync(join(www, '1k'), Buffer.alloc(1024, 97));
writeFileSync(join(www, 'packages', '64k.bin'), Buffer.alloc(64 * 1024, 98));
execFileSync('truncate', ['-s', '1G', join(www, '1g')]);

const tlsPort = await freePort();
const upstream = await startNginx(
  `listen 127.0.0.1:${tlsPort} ssl; ssl_certificate ${dir}/leaf.pem; ssl_certificate_key ${dir}/leaf.key;
   keepalive_timeout 60s; root ${www}; location / { }`,
  '',
  '/1k',
);
const dev = await startDevutil(
  {
    DEVUTIL_LOG_LEVEL: 'error',
    DEVUTIL_PROXY_RESOLVE: HOSTS.map((h) => `${h}=127.0.0.1:${tlsPort}`).join(','),
    DEVUTIL_PROXY_UPSTREAM_CA: `${dir}/ca.pem`,
    DEVUTIL_PROXY_RATE_LIMIT: 'off',
    DEVUTIL_PROXY_MAX_CONCURRENT: '0',
  },
  '/proxy/robots.txt',
);
const ngx = await startNginx(
  `location /raw.githubusercontent.com/ {
     proxy_pass https://up/; proxy_http_version 1.1; proxy_set_header Connection "";
     proxy_set_header Host raw.githubusercontent.com; proxy_ssl_server_name on;
     proxy_ssl_name raw.githubusercontent.com; proxy_ssl_verify on;
     proxy_ssl_trusted_certificate ${dir}/ca.pem; proxy_ssl_session_reuse on;
     proxy_max_temp_file_size 0;
   }
   location /static/ { alias ${www}/packages/; }`,
  `upstream up { server 127.0.0.1:${tlsPort}; keepalive 64; }`,
  '/static/64k.bin',
);

/** Downloads `url` with curl to /dev/null, sampling the RSS of `pid`; returns bytes/s and RSS figures. */
async function stream(url: string, pid: number): Promise<{ bps: number; rssStart: number; rssPeak: number }> {
  const rssStart = rssOf(pid);
  let rssPeak = rssStart;
  const t = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssOf(pid));
  }, 100);
  const { spawn } = await import('node:child_process');
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{speed_download} %{size_download}', url]);
    let s = '';
    c.stdout.on('data', (d: Buffer) => {
      s += d.toString();
    });
    c.on('error', reject);
    c.on('close', () => resolve(s));
  });
  clearInterval(t);
  const [speed, size] = out.split(' ').map(Number);
  if (size !== 1024 ** 3) throw new Error(`short download from ${url}: ${out}`);
  return { bps: speed ?? Number.NaN, rssStart, rssPeak };
}

const procs: Proc[] = [dev, ngx, upstream];
try {
  const d1k = `${dev.url}/proxy/raw.githubusercontent.com/1k`;
  const n1k = `${ngx.url}/raw.githubusercontent.com/1k`;
  // Warm-up: JIT, upstream TLS pools and session caches on both sides. Node needed ~8 s of load
  // here before its figures settled (measured on a shared 2-core machine).
  wrk(d1k, { durationSec: 10, connections });
  wrk(n1k, { durationSec: 3, connections });
  const d = wrk(d1k, { durationSec, connections });
  const n = wrk(n1k, { durationSec, connections });
  report('1 KiB through the proxy', 'nginx proxy_pass', [
    { metric: 'throughput', unit: 'req/s', devutil: d.rps, anchor: n.rps, higherIsBetter: true, target: 0.5 },
    { metric: 'p99 latency', unit: 'ms', devutil: d.p99ms, anchor: n.p99ms, higherIsBetter: false },
  ]);
  if (d.errors || n.errors) console.log(`errors: devutil ${d.errors}, nginx ${n.errors}`);

  for (const u of [
    `${dev.url}/proxy/raw.githubusercontent.com/1g`,
    `${ngx.url}/raw.githubusercontent.com/1g`,
  ])
    execFileSync('curl', ['-sS', '-o', '/dev/null', '-r', '0-268435455', u]);
  const ds = await stream(`${dev.url}/proxy/raw.githubusercontent.com/1g`, dev.pid);
  const ns = await stream(`${ngx.url}/raw.githubusercontent.com/1g`, ngx.pid);
  const mib = (b: number) => b / 1024 / 1024;
  report('one 1 GiB stream', 'nginx proxy_pass', [
    {
      metric: 'throughput',
      unit: 'MiB/s',
      devutil: mib(ds.bps),
      anchor: mib(ns.bps),
      higherIsBetter: true,
      target: 0.9,
    },
    {
      metric: 'RSS growth',
      unit: 'MiB',
      devutil: mib(ds.rssPeak - ds.rssStart),
      anchor: mib(ns.rssPeak - ns.rssStart),
      higherIsBetter: false,
    },
  ]);
  console.log(
    `devutil RSS: ${mib(ds.rssStart).toFixed(0)} MiB before, ${mib(ds.rssPeak).toFixed(0)} MiB peak`,
  );

  const hit = `${dev.url}/proxy/files.pythonhosted.org/packages/64k.bin`;
  await fetch(hit).then((r) => r.arrayBuffer());
  const check = await fetch(hit);
  await check.arrayBuffer();
  if (check.headers.get('x-cache') !== 'HIT') throw new Error('the cache did not serve the primed object');
  wrk(hit, { durationSec: 6, connections });
  wrk(`${ngx.url}/static/64k.bin`, { durationSec: 2, connections });
  const dc = wrk(hit, { durationSec, connections });
  const nc = wrk(`${ngx.url}/static/64k.bin`, { durationSec, connections });
  report('64 KiB cache hit vs nginx static file', 'nginx static', [
    { metric: 'throughput', unit: 'req/s', devutil: dc.rps, anchor: nc.rps, higherIsBetter: true },
    { metric: 'p99 latency', unit: 'ms', devutil: dc.p99ms, anchor: nc.p99ms, higherIsBetter: false },
  ]);
} finally {
  for (const p of procs) await p.close();
  rmSync(dir, { recursive: true, force: true });
}

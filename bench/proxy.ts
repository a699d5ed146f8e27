// Reverse proxy: devutil vs nginx proxy_pass and vs a bare node:http + undici proxy, all to the
// same local HTTPS upstream (nginx serving files with a test-CA certificate for the real host
// names). Issue 15 targets: 1 KiB req/s >= 0.9x bare node (nginx ratio printed too); one 1 GiB
// stream >= 0.8x nginx; a 64 KiB cache hit >= 0.6x nginx serving the same bytes statically.
//
// The 1 GiB stream is measured from a warm page cache, alternating the proxies, median of rounds.
// Earlier versions warmed only the first 256 MiB of the (sparse) 1 GiB file and always ran devutil
// first: its run paid for the kernel filling 768 MiB of page cache in the upstream (about 2 s of
// system CPU per GiB on this 2-core machine, competing with devutil for the cores; devutil's own
// CPU per byte also about doubled in such runs), while nginx then read a warm cache. That is why this bench printed 0.44-0.50x where a standalone run said
// 0.79-0.93x; the upstream's own speed (direct, no proxy) is printed for the same reason.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';
import { makePki } from '../test/fixtures/proxy/tls.ts';
import { freePort } from '../test/helpers/ports.ts';
import {
  cpuSnapshot,
  cpuUse,
  invalid,
  median,
  type Proc,
  report,
  rssOf,
  saturation,
  startDevutil,
  startNginx,
  wrk,
} from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_PROXY_STREAM_ROUNDS'] ?? 3);
const STREAM = process.env['BENCH_PROXY_STREAM_SIZE'] ?? '1G';
const warmSec = Number(process.env['BENCH_WARM_SECONDS'] ?? 10);
const connections = 64;
// The hit row's object size (KiB) and tier: BENCH_PROXY_HIT_TIER=disk turns the memory tier off, so
// every hit is read from the cache's body file (what X-Accel-Redirect would hand to nginx).
const HIT_KIB = Number(process.env['BENCH_PROXY_HIT_KIB'] ?? 64);
const HIT_TIER = process.env['BENCH_PROXY_HIT_TIER'] === 'disk' ? 'disk' : 'memory';
const HOSTS = ['raw.githubusercontent.com', 'files.pythonhosted.org'];
const MiB = 1024 * 1024;

const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-proxy-'));
makePki(dir, HOSTS);
chmodSync(dir, 0o755); // nginx workers run unprivileged
const www = join(dir, 'www');
execFileSync('mkdir', ['-p', join(www, 'packages')]);
writeFileSync(join(www, '1k'), Buffer.alloc(1024, 97));
writeFileSync(join(www, 'packages', '64k.bin'), Buffer.alloc(HIT_KIB * 1024, 98));
execFileSync('truncate', ['-s', STREAM, join(www, '1g')]);
const streamBytes = Number(execFileSync('stat', ['-c', '%s', join(www, '1g')], { encoding: 'utf8' }));

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
    ...(HIT_TIER === 'disk' ? { DEVUTIL_PROXY_CACHE_MEMORY_BYTES: '0' } : {}),
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
const barePort = await freePort();
const bareProc: ChildProcess = spawn(
  process.execPath,
  [
    ...TS_EXEC_ARGV,
    new URL('./anchors/bare-proxy.ts', import.meta.url).pathname,
    String(barePort),
    String(tlsPort),
    'raw.githubusercontent.com',
    `${dir}/ca.pem`,
    '/raw.githubusercontent.com',
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const bare = { url: `http://127.0.0.1:${barePort}`, pid: bareProc.pid ?? 0 };
for (let i = 0; i < 100; i++) {
  const ok = await fetch(`${bare.url}/raw.githubusercontent.com/1k`).then(
    (r) => r.arrayBuffer().then(() => r.ok),
    () => false,
  );
  if (ok) break;
  await new Promise((r) => setTimeout(r, 100));
}

interface StreamRun {
  bps: number;
  /** CPU seconds per GiB: the proxy's tree, the upstream's. */
  proxyCpu: number;
  upstreamCpu: number;
  /** The busiest thread's share of a core during the run: the proxy's, the upstream's. */
  proxyBusiest: number;
  upstreamBusiest: number;
  rssGrowth: number;
}

/** One whole download with curl to /dev/null, CPU of the proxy and the upstream, RSS peak. */
async function stream(url: string, pid: number, curlArgs: string[] = []): Promise<StreamRun> {
  const rssStart = rssOf(pid);
  let rssPeak = rssStart;
  const t = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssOf(pid));
  }, 100);
  const cpu0 = cpuSnapshot(pid);
  const up0 = cpuSnapshot(upstream.pid);
  const t0 = performance.now();
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn('curl', [
      '-sS',
      '-f',
      '-o',
      '/dev/null',
      '-w',
      '%{speed_download} %{size_download}',
      ...curlArgs,
      url,
    ]);
    let s = '';
    c.stdout.on('data', (d: Buffer) => {
      s += d.toString();
    });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(s) : reject(new Error(`curl ${url} exited ${code}`))));
  });
  clearInterval(t);
  const wall = (performance.now() - t0) / 1000;
  const [speed, size] = out.split(' ').map(Number);
  if (size !== streamBytes) throw new Error(`short download from ${url}: ${out}`);
  const gib = streamBytes / 1024 ** 3;
  const proxy = cpuUse(cpu0, cpuSnapshot(pid), wall);
  const up = cpuUse(up0, cpuSnapshot(upstream.pid), wall);
  return {
    bps: speed ?? Number.NaN,
    proxyCpu: (proxy.cores * wall) / gib,
    upstreamCpu: (up.cores * wall) / gib,
    proxyBusiest: proxy.busiest,
    upstreamBusiest: up.busiest,
    rssGrowth: rssPeak - rssStart,
  };
}

const procs: Proc[] = [dev, ngx, upstream];
try {
  // ---- 1 KiB: devutil vs bare node:http + undici (target) and vs nginx proxy_pass (printed) ----
  const d1k = `${dev.url}/proxy/raw.githubusercontent.com/1k`;
  const n1k = `${ngx.url}/raw.githubusercontent.com/1k`;
  const b1k = `${bare.url}/raw.githubusercontent.com/1k`;
  // Warm-up: JIT, upstream TLS pools and session caches on all sides. Node needed ~8 s of load
  // here before its figures settled (measured on a shared 2-core machine).
  wrk(d1k, { durationSec: warmSec, connections });
  wrk(b1k, { durationSec: Math.ceil(warmSec / 2), connections });
  wrk(n1k, { durationSec: Math.ceil(warmSec / 3), connections });
  const d = wrk(d1k, { durationSec, connections, watch: { devutil: dev.pid } });
  const b = wrk(b1k, { durationSec, connections, watch: { anchor: bare.pid } });
  const n = wrk(n1k, { durationSec, connections, watch: { anchor: ngx.pid } });
  report('1 KiB through the proxy', 'bare node', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: d.rps,
      anchor: b.rps,
      higherIsBetter: true,
      target: 0.9,
      invalid: invalid({ devutil: d, bare: b }),
    },
    { metric: 'p99 latency', unit: 'ms', devutil: d.p99ms, anchor: b.p99ms, higherIsBetter: false },
  ]);
  console.log(saturation(d, b, 'bare node'));
  report('1 KiB through the proxy', 'nginx proxy_pass', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: d.rps,
      anchor: n.rps,
      higherIsBetter: true,
      invalid: invalid({ devutil: d, nginx: n }),
    },
    { metric: 'p99 latency', unit: 'ms', devutil: d.p99ms, anchor: n.p99ms, higherIsBetter: false },
  ]);
  console.log(saturation(d, n, 'nginx'));

  // ---- one big stream: warm page cache, alternating, median of ROUNDS ----
  const direct = () =>
    stream(`https://raw.githubusercontent.com:${tlsPort}/1g`, upstream.pid, [
      '--cacert',
      `${dir}/ca.pem`,
      '--resolve',
      `raw.githubusercontent.com:${tlsPort}:127.0.0.1`,
    ]);
  await direct(); // the whole file into the page cache, and the upstream's TLS warm
  const runs = { devutil: [] as StreamRun[], nginx: [] as StreamRun[], upstream: [] as StreamRun[] };
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 ? (['nginx', 'devutil'] as const) : (['devutil', 'nginx'] as const);
    for (const k of order)
      runs[k].push(
        k === 'devutil'
          ? await stream(`${dev.url}/proxy/raw.githubusercontent.com/1g`, dev.pid)
          : await stream(`${ngx.url}/raw.githubusercontent.com/1g`, ngx.pid),
      );
    runs.upstream.push(await direct());
  }
  const med = (k: keyof typeof runs, f: keyof StreamRun) => median(runs[k].map((r) => r[f]));
  const label = `one ${(streamBytes / 1024 ** 3).toFixed(streamBytes % 1024 ** 3 ? 2 : 0)} GiB stream`;
  console.log(
    `${label}, MiB/s per round: devutil ${runs.devutil.map((r) => (r.bps / MiB).toFixed(0)).join(' ')}; nginx ${runs.nginx.map((r) => (r.bps / MiB).toFixed(0)).join(' ')}; upstream direct ${runs.upstream.map((r) => (r.bps / MiB).toFixed(0)).join(' ')}`,
  );
  report(`${label} (median of ${ROUNDS}, warm page cache)`, 'nginx proxy_pass', [
    {
      metric: 'throughput',
      unit: 'MiB/s',
      devutil: med('devutil', 'bps') / MiB,
      anchor: med('nginx', 'bps') / MiB,
      higherIsBetter: true,
      target: 0.8,
    },
    {
      metric: 'proxy CPU per GiB',
      unit: 's',
      devutil: med('devutil', 'proxyCpu'),
      anchor: med('nginx', 'proxyCpu'),
      higherIsBetter: false,
    },
    {
      metric: 'upstream CPU per GiB',
      unit: 's',
      devutil: med('devutil', 'upstreamCpu'),
      anchor: med('nginx', 'upstreamCpu'),
      higherIsBetter: false,
    },
    {
      metric: 'RSS growth',
      unit: 'MiB',
      devutil: med('devutil', 'rssGrowth') / MiB,
      anchor: med('nginx', 'rssGrowth') / MiB,
      higherIsBetter: false,
    },
  ]);
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const sat = (k: 'devutil' | 'nginx') => {
    const p = med(k, 'proxyBusiest');
    const u = med(k, 'upstreamBusiest');
    const who = p >= 0.85 ? `${k} SATURATED` : u >= 0.85 ? 'the upstream SATURATED' : 'neither saturated';
    return `${k} run: ${k}'s busiest thread ${pct(p)}, upstream's ${pct(u)} (${who})`;
  };
  console.log(`stream saturation: ${sat('devutil')} | ${sat('nginx')}`);
  console.log(
    `context: the upstream alone (curl direct, decrypting TLS itself) ${(med('upstream', 'bps') / MiB).toFixed(0)} MiB/s`,
  );

  // ---- 64 KiB (BENCH_PROXY_HIT_KIB) cache hit vs nginx serving the same bytes ----
  const hit = `${dev.url}/proxy/files.pythonhosted.org/packages/64k.bin`;
  await fetch(hit).then((r) => r.arrayBuffer());
  const check = await fetch(hit);
  await check.arrayBuffer();
  if (check.headers.get('x-cache') !== 'HIT') throw new Error('the cache did not serve the primed object');
  wrk(hit, { durationSec: Math.ceil(warmSec / 2), connections });
  wrk(`${ngx.url}/static/64k.bin`, { durationSec: Math.ceil(warmSec / 5), connections });
  const dc = wrk(hit, { durationSec, connections, watch: { devutil: dev.pid } });
  const nc = wrk(`${ngx.url}/static/64k.bin`, { durationSec, connections, watch: { anchor: ngx.pid } });
  const bad = invalid({ devutil: dc, nginx: nc });
  report(`${HIT_KIB} KiB cache hit (${HIT_TIER} tier) vs nginx static file`, 'nginx static', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: dc.rps,
      anchor: nc.rps,
      higherIsBetter: true,
      target: 0.6,
      invalid: bad,
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: dc.p99ms,
      anchor: nc.p99ms,
      higherIsBetter: false,
      invalid: bad,
    },
  ]);
  console.log(saturation(dc, nc, 'nginx'));
} finally {
  for (const p of procs) await p.close();
  bareProc.kill();
  rmSync(dir, { recursive: true, force: true });
}

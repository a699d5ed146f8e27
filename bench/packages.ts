// Package mounts (npm shown; go and hf share the same path through the cache): a cached 100 MiB
// tarball through devutil against nginx serving the same file (issue 25: >= 0.8x), 16 clients
// asking for one uncached tarball at once (issue 25: exactly one upstream fetch), and a 64 KiB
// cached tarball's req/s against nginx (no target). The upstream is the test stand-in for
// registry.npmjs.org (HTTPS with a test CA), reached through DEVUTIL_PROXY_RESOLVE.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serveFile, startInternet } from '../test/fixtures/proxy/internet.ts';
import { tempDir } from '../test/helpers/server.ts';
import { header, invalid, median, report, startDevutil, startNginx, wrk } from './lib.ts';

const SIZE = process.env['BENCH_PACKAGES_SIZE'] ?? '100M';
const ROUNDS = Number(process.env['BENCH_PACKAGES_ROUNDS'] ?? 3);
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);

header('package mounts: cached tarball stream and hits vs nginx; coalesced cold fetches');
const dir = tempDir('devutil-bench-packages-');
chmodSync(dir, 0o755);
const www = join(dir, 'www');
mkdirSync(www);
execFileSync('truncate', ['-s', SIZE, join(www, 'big-1.0.0.tgz')]);
writeFileSync(join(www, 'small-1.0.0.tgz'), Buffer.alloc(64 * 1024, 7));
const bigBytes = Number(execFileSync('stat', ['-c', '%s', join(www, 'big-1.0.0.tgz')], { encoding: 'utf8' }));

const net = await startInternet(dir);
net.on('registry.npmjs.org', (req, res, url) =>
  serveFile(req, res, join(www, url.pathname.split('/').pop() ?? '')),
);
const dev = await startDevutil({
  DEVUTIL_PROXY_ECOSYSTEMS: 'npm',
  DEVUTIL_PROXY_RESOLVE: net.resolve.join(','),
  DEVUTIL_PROXY_UPSTREAM_CA: net.caFile,
  DEVUTIL_PROXY_CLIENT_BYTES: 'off',
  DEVUTIL_PROXY_RATE_LIMIT: '0',
  DEVUTIL_PROXY_MAX_CONCURRENT: '0',
});
const nginx = await startNginx(`root ${www}; location / { }`, '', '/small-1.0.0.tgz');

/** Seconds to read `url` whole, and the bytes read. */
async function pull(url: string): Promise<{ sec: number; bytes: number }> {
  const t = performance.now();
  const r = await fetch(url);
  let bytes = 0;
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  for (let c = await reader.read(); !c.done; c = await reader.read()) bytes += c.value.length;
  return { sec: (performance.now() - t) / 1000, bytes };
}
/** The same with curl (a client cheaper than fetch, so the servers, not the client, are measured). */
async function curlPull(url: string): Promise<{ sec: number; bytes: number }> {
  const { stdout } = await promisify(execFile)('curl', [
    '-sS',
    '-o',
    '/dev/null',
    '-w',
    '%{time_total} %{size_download}',
    url,
  ]);
  const [sec = Number.NaN, bytes = 0] = stdout.trim().split(' ').map(Number);
  return { sec, bytes };
}

try {
  const big = `${dev.url}/proxy/npm/big/-/big-1.0.0.tgz`;
  // 16 clients at once on the uncached tarball: one upstream fetch, every client gets every byte.
  const cold = performance.now();
  const got = await Promise.all(Array.from({ length: 16 }, () => pull(big)));
  const coldSec = (performance.now() - cold) / 1000;
  const fetches = net.seen.filter((s) => s.url.endsWith('/big-1.0.0.tgz')).length;
  const complete = got.every((g) => g.bytes === bigBytes);
  console.log(
    `16 clients, one uncached ${SIZE} tarball: ${fetches} upstream fetch(es) (target 1: ${fetches === 1 && complete ? 'MET' : 'NOT MET'}), all complete: ${complete}, ${coldSec.toFixed(1)} s`,
  );

  const d: number[] = [];
  const n: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // Alternating, so neither side always reads a page cache the other just warmed.
    const a = await curlPull(big);
    const b = await curlPull(`${nginx.url}/big-1.0.0.tgz`);
    if (a.bytes !== bigBytes || b.bytes !== bigBytes) throw new Error('short read');
    d.push(bigBytes / 1048576 / a.sec);
    n.push(bigBytes / 1048576 / b.sec);
  }
  console.log(
    `stream rounds MiB/s: devutil ${d.map((x) => x.toFixed(0)).join(' ')}; nginx ${n.map((x) => x.toFixed(0)).join(' ')}`,
  );

  const small = `${dev.url}/proxy/npm/small/-/small-1.0.0.tgz`;
  await pull(small);
  const dw = wrk(small, { connections: 32, durationSec });
  const nw = wrk(`${nginx.url}/small-1.0.0.tgz`, { connections: 32, durationSec });
  report('package mounts (npm)', 'nginx', [
    {
      metric: `cached ${SIZE} tarball`,
      devutil: median(d),
      anchor: median(n),
      unit: 'MiB/s',
      higherIsBetter: true,
      target: 0.8,
    },
    {
      metric: 'cached 64 KiB tarball',
      devutil: dw.rps,
      anchor: nw.rps,
      unit: 'req/s',
      higherIsBetter: true,
      invalid: invalid({ devutil: dw, nginx: nw }),
    },
  ]);
} finally {
  await dev.close();
  await nginx.close();
  await net.close();
}

// Container registries (issue 25): (1) a cached 100 MiB blob pulled through devutil vs nginx serving
// the same file (target >= 0.8x, wrk on 4 connections and curl on 1); (2) a cold pull of a 100 MiB
// blob through devutil vs the same pull straight from the stand-in upstream (Debian's docker-registry
// behind the test HTTPS front, as in the e2e tests): devutil may add at most 10% (rounds alternate,
// each devutil round on a blob it has never seen); (3) 16 clients pulling one uncached 3-layer image
// at once: upstream blob fetches per blob (must be 1) and the wall time, beside the same 16 pulls
// straight from the upstream.
import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRegistryWorld } from '../test/fixtures/oci/registry.ts';
import {
  header,
  invalid,
  median,
  report,
  requireCommand,
  saturation,
  startDevutil,
  startNginx,
  treeCpuSeconds,
  wrk,
} from './lib.ts';

const MiB = 1024 * 1024;
// Async: the upstream's HTTPS front runs in this process, a synchronous child would stall it.
const run = promisify(execFile);
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
const SIZE = Number(process.env['BENCH_OCI_BLOB_MIB'] ?? 100) * MiB;

header('container registry blobs through devutil (oci profile) vs nginx static and vs the upstream itself');
requireCommand('curl');
requireCommand('wrk');
requireCommand('docker-registry', 'docker-registry');
const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-oci-'));
chmodSync(dir, 0o755);
const world = await startRegistryWorld(join(dir, 'world'), {
  repo: 'library/bench',
  tag: 'r0',
  layers: [SIZE],
});
const dataDir = join(dir, 'data');
mkdirSync(dataDir);
const dev = await startDevutil({
  DEVUTIL_DATA_DIR: dataDir,
  DEVUTIL_PROXY_ECOSYSTEMS: 'oci',
  DEVUTIL_PROXY_RESOLVE: world.resolve.join(','),
  DEVUTIL_PROXY_UPSTREAM_CA: world.caFile,
  DEVUTIL_PROXY_CLIENT_BYTES: 'off',
  DEVUTIL_PROXY_RATE_LIMIT: 'off',
  DEVUTIL_PROXY_MAX_CONCURRENT: '0',
});
// The ceiling: the simplest bare-Node relay doing the same job (undici from the upstream, digest
// computed on the way, straight to the client: no spool, no cache, no sharing, no limits).
const BARE = `
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
const agent = new Agent({ connect: { ca: [...rootCertificates, readFileSync(process.env.CA, 'utf8')], servername: 'registry-1.docker.io' } });
const server = createServer(async (req, res) => {
  const up = await request('https://127.0.0.1:' + process.env.UP + req.url, {
    dispatcher: agent,
    headers: { host: 'registry-1.docker.io', authorization: req.headers.authorization },
  });
  res.writeHead(up.statusCode, { 'content-length': up.headers['content-length'] });
  const hash = createHash('sha256');
  for await (const chunk of up.body) {
    hash.update(chunk);
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
  }
  res.end();
  hash.digest('hex');
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;
const bare = spawn(process.execPath, ['--input-type=module', '-e', BARE], {
  cwd: new URL('..', import.meta.url).pathname,
  env: { ...process.env, CA: world.caFile, UP: String(world.port) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const barePort = await new Promise<number>((resolve, reject) => {
  bare.stdout.once('data', (c: Buffer) => resolve(Number(c.toString().trim())));
  bare.once('exit', (code) => reject(new Error(`bare relay exited ${code}`)));
});
const resolve = ['registry-1.docker.io', 'auth.docker.io'].flatMap((h) => [
  '--connect-to',
  `${h}:443:127.0.0.1:${world.port}`,
]);

/** A pull token of the upstream's own token service (the stand-in's auth.docker.io). */
async function upstreamToken(repo: string): Promise<string> {
  const { stdout: out } = await run(
    'curl',
    [
      '-sS',
      '-f',
      ...resolve,
      '--cacert',
      world.caFile,
      `https://auth.docker.io/token?service=registry.docker.io&scope=repository:${repo}:pull`,
    ],
    { encoding: 'utf8' },
  );
  return (JSON.parse(out) as { token: string }).token;
}

/** Seconds to GET `url` whole with curl, checking it got `size` bytes. */
async function pull(url: string, size: number, extra: string[] = []): Promise<number> {
  const { stdout } = await run(
    'curl',
    ['-sS', '-f', '-o', '/dev/null', '-w', '%{time_total} %{size_download}', ...extra, url],
    { encoding: 'utf8' },
  );
  const [time, got] = stdout.split(' ').map(Number);
  if (got !== size) throw new Error(`short pull from ${url}: ${got} of ${size} bytes`);
  return time ?? Number.NaN;
}

const upstreamUrl = (repo: string, digest: string) =>
  `https://registry-1.docker.io/v2/${repo}/blobs/${digest}`;
const devutilUrl = (repo: string, digest: string) => `${dev.url}/v2/docker.io/${repo}/blobs/${digest}`;

try {
  // (2) cold pulls first: a new blob for every devutil round, the upstream alone on the same blob.
  const cold: { devutil: number; upstream: number; bare: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const image = i === 0 ? world.image : world.addImage('library/bench', `r${i}`, [SIZE]);
    const layer = image.layers[0]!;
    const token = await upstreamToken('library/bench');
    const up = await pull(upstreamUrl('library/bench', layer.digest), layer.data.length, [
      ...resolve,
      '--cacert',
      world.caFile,
      '-H',
      `Authorization: Bearer ${token}`,
    ]);
    const b = await pull(
      `http://127.0.0.1:${barePort}/v2/library/bench/blobs/${layer.digest}`,
      layer.data.length,
      ['-H', `Authorization: Bearer ${token}`],
    );
    const cpu0 = treeCpuSeconds(dev.pid);
    const d = await pull(devutilUrl('library/bench', layer.digest), layer.data.length);
    const cpu = treeCpuSeconds(dev.pid) - cpu0;
    cold.push({ devutil: d, upstream: up, bare: b });
    console.log(
      `cold round ${i + 1}: upstream ${up.toFixed(3)} s, bare-Node relay ${b.toFixed(3)} s, through devutil ${d.toFixed(3)} s (devutil CPU ${cpu.toFixed(2)} s: TLS from the upstream, digest, spool write, send)`,
    );
  }
  report(`cold pull of a ${SIZE / MiB} MiB blob, median of ${rounds}`, 'upstream alone', [
    {
      metric: 'time, through devutil',
      unit: 's',
      devutil: median(cold.map((c) => c.devutil)),
      anchor: median(cold.map((c) => c.upstream)),
      higherIsBetter: false,
      target: 1.1,
    },
  ]);
  report(`cold pull of a ${SIZE / MiB} MiB blob, median of ${rounds}`, 'bare-Node relay', [
    {
      metric: 'time, through devutil',
      unit: 's',
      devutil: median(cold.map((c) => c.devutil)),
      anchor: median(cold.map((c) => c.bare)),
      higherIsBetter: false,
    },
  ]);

  // (1) the blob of round 1 is cached now: devutil vs nginx serving the registry's own file of it.
  const layer = world.image.layers[0]!;
  const static_ = join(dir, 'static');
  mkdirSync(static_, { mode: 0o755 });
  copyFileSync(world.blobFile(layer.digest), join(static_, 'blob'));
  chmodSync(join(static_, 'blob'), 0o644);
  const ngx = await startNginx(`location / { root ${static_}; }`, '', '/blob');
  try {
    const urls = { devutil: devutilUrl('library/bench', layer.digest), nginx: `${ngx.url}/blob` };
    const conn = { durationSec, connections: 4 };
    for (const u of Object.values(urls)) wrk(u, { ...conn, durationSec: 2 });
    const d = wrk(urls.devutil, { ...conn, watch: { devutil: dev.pid } });
    const n = wrk(urls.nginx, { ...conn, watch: { anchor: ngx.pid } });
    report(`GET a cached ${SIZE / MiB} MiB blob, 4 connections`, 'nginx static', [
      {
        metric: 'blob, devutil',
        unit: 'MiB/s',
        devutil: d.bytesPerSec / MiB,
        anchor: n.bytesPerSec / MiB,
        higherIsBetter: true,
        target: 0.8,
        invalid: invalid({ devutil: d, nginx: n }),
      },
    ]);
    console.log(saturation(d, n, 'nginx'));
    const best = { devutil: Number.POSITIVE_INFINITY, nginx: Number.POSITIVE_INFINITY };
    for (let i = 0; i < 5; i++)
      for (const k of ['devutil', 'nginx'] as const)
        best[k] = Math.min(best[k], await pull(urls[k], layer.data.length));
    report(`GET a cached ${SIZE / MiB} MiB blob, curl, 1 connection, best of 5`, 'nginx static', [
      {
        metric: 'blob, devutil',
        unit: 'MiB/s',
        devutil: layer.data.length / MiB / best.devutil,
        anchor: layer.data.length / MiB / best.nginx,
        higherIsBetter: true,
        target: 0.8,
      },
    ]);
  } finally {
    await ngx.close();
  }

  // (3) 16 clients at once on an image nobody pulled yet; the upstream alone as the anchor.
  const sixteen = async (
    image: { layers: { digest: string }[]; config: { digest: string } },
    via: 'devutil' | 'upstream',
  ) => {
    const digests = [image.config.digest, ...image.layers.map((l) => l.digest)];
    const token = via === 'upstream' ? await upstreamToken('library/sixteen') : '';
    const args = (d: string) =>
      via === 'devutil'
        ? [devutilUrl('library/sixteen', d)]
        : [
            ...resolve,
            '--cacert',
            world.caFile,
            '-H',
            `Authorization: Bearer ${token}`,
            upstreamUrl('library/sixteen', d),
          ];
    const script = Array.from({ length: 16 }, () =>
      digests
        .map(
          (d) =>
            `curl -sS -f -o /dev/null ${args(d)
              .map((a) => `'${a}'`)
              .join(' ')} &`,
        )
        .join('\n'),
    ).join('\n');
    const t0 = performance.now();
    await run('bash', ['-c', `${script}\nwait`]);
    return (performance.now() - t0) / 1000;
  };
  const a = world.addImage('library/sixteen', 'a', [30 * MiB, 20 * MiB, 10 * MiB]);
  const b = world.addImage('library/sixteen', 'b', [30 * MiB, 20 * MiB, 10 * MiB]);
  const before = world.blobFetches().length;
  const tDev = await sixteen(a, 'devutil');
  const fetched = world
    .blobFetches()
    .slice(before)
    .map((s) => s.url.replace(/^.*\/blobs\//, ''));
  const tUp = await sixteen(b, 'upstream');
  const perBlob = [a.config, ...a.layers].map((x) => fetched.filter((f) => f === x.digest).length);
  report('16 clients pulling one uncached 3-layer image (60 MiB) at once', 'upstream alone', [
    { metric: 'wall time', unit: 's', devutil: tDev, anchor: tUp, higherIsBetter: false },
  ]);
  console.log(
    `upstream fetches per blob through devutil: ${perBlob.join(', ')} (${perBlob.every((n) => n === 1) ? 'one each: MET' : 'NOT MET'}); straight from the upstream: 16 each`,
  );
} finally {
  bare.kill();
  await dev.close();
  await world.close();
}

// Random image (issue 4). (1) Uncached: 1920x1080 WebP (attention crop, Q80) from a 4000x3000
// JPEG, devutil over HTTP with caches off vs the `vipsthumbnail` CLI doing the same resize and
// encode (Debian libvips-tools), images/s; target >= 0.8x. (2) Cached: the same WebP from
// devutil's memory cache vs nginx serving the file; target >= 0.6x req/s (issue 15).
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { artSvg } from '../src/services/image/generator.ts';
import {
  invalid,
  median,
  report,
  requireCommand,
  saturation,
  startDevutil,
  startNginx,
  tempFile,
  treeCpuSeconds,
  type WrkResult,
  wrk,
} from './lib.ts';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 15);
// BENCH_ONLY=uncached|cached runs one half (the machine may be busy; rerun the half that suffered).
const only = process.env['BENCH_ONLY'] ?? '';
if (only !== 'cached') requireCommand('vipsthumbnail', 'libvips-tools');
const FILES = 32;
const cores = availableParallelism();
const work = mkdtempSync(join(tmpdir(), 'devutil-bench-image-'));
chmodSync(work, 0o755); // nginx workers run as nobody
const srcDir = join(work, 'src');
mkdirSync(srcDir);

// A photo-like 4000x3000 JPEG: generated art with Gaussian noise overlaid, so the decoder has
// real entropy to chew on (a smooth gradient would flatter both sides).
const art = await sharp(Buffer.from(artSvg('bench', 4000, 3000)))
  .composite([
    {
      input: await sharp({
        create: {
          width: 4000,
          height: 3000,
          channels: 3,
          background: '#808080',
          noise: { type: 'gaussian', mean: 128, sigma: 12 },
        },
      })
        .png()
        .toBuffer(),
      blend: 'overlay',
    },
  ])
  .jpeg({ quality: 90 })
  .toBuffer();
for (let i = 0; i < FILES; i++) writeFileSync(join(srcDir, `f${i}.jpg`), art);
console.log(
  `source: 4000x3000 JPEG, ${(art.length / 1024 / 1024).toFixed(2)} MiB, ${FILES} copies; ${cores} cores`,
);

/** CPU seconds of this process's exited, reaped children (cutime + cstime). */
function childrenCpu(): number {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** vipsthumbnail over `n` files per process, `procs` processes at once (each uses all cores). */
async function vipsRun(procs: number, n: number): Promise<{ images: number; seconds: number; cpu: number }> {
  const cpu0 = childrenCpu();
  const out = join(work, `vips-${procs}`);
  mkdirSync(out, { recursive: true });
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: procs }, (_, p) => {
      const files = Array.from({ length: n }, (_, i) => join(srcDir, `f${(p * n + i) % FILES}.jpg`));
      const proc = spawn(
        'vipsthumbnail',
        [
          ...files,
          '--size',
          '1920x1080',
          '--smartcrop',
          'attention',
          '-o',
          `${out}/%s-${p}.webp[Q=80,effort=4,strip]`,
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      return new Promise<void>((resolve, reject) =>
        proc.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`vipsthumbnail exited ${code}`)),
        ),
      );
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { images: procs * n, seconds, cpu: childrenCpu() - cpu0 };
}

const script = tempFile(
  'ids.lua',
  `counter = 0\nrequest = function()\n  counter = counter + 1\n  return wrk.format(nil, "/rest/api/v1/image?id=f" .. (counter % ${FILES}))\nend\n`,
);

try {
  if (only !== 'cached') await uncachedPart();
  if (only !== 'uncached') await cachedPart();
} finally {
  rmSync(work, { recursive: true, force: true });
}

async function uncachedPart(): Promise<void> {
  const dev = await startDevutil({
    DEVUTIL_LOG_LEVEL: 'error',
    DEVUTIL_IMAGE_DIR: srcDir,
    DEVUTIL_IMAGE_RATE_LIMIT: 'off',
    DEVUTIL_IMAGE_CACHE_MEMORY_BYTES: '0',
    DEVUTIL_IMAGE_CACHE_DISK_BYTES: '0',
    DEVUTIL_IMAGE_QUEUE_LENGTH: '256',
    // One client (wrk) drives all the load: its fair share of the pool is the whole pool.
    DEVUTIL_IMAGE_CLIENT_SHARE: '100',
  });
  // Rounds alternate devutil and vipsthumbnail so both see the same machine load (the box may be
  // shared); each side's figure is its total images over its total time.
  const rounds = 3;
  const devSec = Math.max(4, Math.round(seconds / rounds));
  let devImages = 0;
  let devTime = 0;
  let devCpu = 0;
  let devErrors = 0;
  let vipsImages = 0;
  let vipsTime = 0;
  let vipsCpu = 0;
  try {
    const check = await fetch(`${dev.url}/rest/api/v1/image?id=f0`);
    const meta = await sharp(Buffer.from(await check.arrayBuffer())).metadata();
    console.log(
      `devutil answers ${check.status} ${meta.format} ${meta.width}x${meta.height} from ${check.headers.get('image-source')}`,
    );
    wrk(dev.url, { durationSec: 3, connections: cores, script });
    await vipsRun(cores, 2); // warm the page cache and the binary
    for (let r = 0; r < rounds; r++) {
      const cpu0 = treeCpuSeconds(dev.pid);
      const w = wrk(dev.url, { durationSec: devSec, connections: cores, script });
      devCpu += treeCpuSeconds(dev.pid) - cpu0;
      devImages += w.requests;
      devTime += devSec;
      devErrors += w.errors;
      const v = await vipsRun(cores, 4);
      vipsImages += v.images;
      vipsTime += v.seconds;
      vipsCpu += v.cpu;
    }
  } finally {
    await dev.close();
  }
  const devRate = devImages / devTime;
  const vipsRate = vipsImages / vipsTime;
  console.log(
    `${rounds} alternating rounds: devutil ${devImages} images, vipsthumbnail ${vipsImages} images`,
  );
  report('uncached 1920x1080 WebP from a 4000x3000 JPEG', 'vipsthumbnail', [
    {
      metric: 'images per second',
      unit: 'img/s',
      devutil: devRate,
      anchor: vipsRate,
      higherIsBetter: true,
      target: 0.8,
      invalid: devErrors ? `devutil ${devErrors} errors (non-2xx or wrk timeouts)` : undefined,
    },
    // Context, less sensitive to a busy machine: CPU time per image (the last vipsthumbnail run's).
    {
      metric: 'CPU seconds per image',
      unit: 'cpu-s',
      devutil: devCpu / devImages,
      anchor: vipsCpu / vipsImages,
      higherIsBetter: false,
    },
  ]);
}

interface Totals {
  requests: number;
  seconds: number;
  cpu: number;
  errors: number;
  p99: number[];
  runs: WrkResult[];
}

/** One wrk round added to `t`, with the server's CPU seconds (req per CPU-second barely moves with load). */
function round(
  t: Totals,
  url: string,
  pid: number,
  connections: number,
  durationSec: number,
  side: 'devutil' | 'anchor',
): void {
  const before = treeCpuSeconds(pid);
  const r = wrk(url, { durationSec, connections, watch: { [side]: pid } });
  t.cpu += treeCpuSeconds(pid) - before;
  t.requests += r.requests;
  t.seconds += durationSec;
  t.errors += r.errors;
  t.p99.push(r.p99ms);
  t.runs.push(r);
}

/** The same bytes from devutil's memory cache and from nginx's disk (page cache). */
async function cachedPart(): Promise<void> {
  const dev2 = await startDevutil({
    DEVUTIL_LOG_LEVEL: 'error',
    DEVUTIL_IMAGE_DIR: srcDir,
    DEVUTIL_IMAGE_RATE_LIMIT: 'off',
    DEVUTIL_IMAGE_CLIENT_SHARE: '100',
  });
  const www = join(work, 'www');
  mkdirSync(www);
  let ngx: Awaited<ReturnType<typeof startNginx>> | undefined;
  try {
    const path = '/rest/api/v1/image?id=f1';
    const body = Buffer.from(await (await fetch(dev2.url + path)).arrayBuffer());
    writeFileSync(join(www, 'f1.webp'), body);
    ngx = await startNginx(`location / { root ${www}; types { image/webp webp; } }`, '', '/f1.webp');
    const conn = 64;
    wrk(dev2.url + path, { durationSec: 3, connections: conn });
    wrk(`${ngx.url}/f1.webp`, { durationSec: 3, connections: conn });
    // Alternating rounds, so both see the same machine load.
    const d: Totals = { requests: 0, seconds: 0, cpu: 0, errors: 0, p99: [], runs: [] };
    const n: Totals = { requests: 0, seconds: 0, cpu: 0, errors: 0, p99: [], runs: [] };
    const each = Math.max(3, Math.round(seconds / 3));
    for (let r = 0; r < 3; r++) {
      round(d, dev2.url + path, dev2.pid, conn, each, 'devutil');
      round(n, `${ngx.url}/f1.webp`, ngx.pid, conn, each, 'anchor');
    }
    report(`cached ${Math.round(body.length / 1024)} KiB WebP`, 'nginx', [
      {
        metric: 'throughput',
        unit: 'req/s',
        devutil: d.requests / d.seconds,
        anchor: n.requests / n.seconds,
        higherIsBetter: true,
        target: 0.6,
        invalid: invalid({ devutil: d.runs, nginx: n.runs }),
      },
      {
        metric: 'p99 latency (median round)',
        unit: 'ms',
        devutil: median(d.p99),
        anchor: median(n.p99),
        higherIsBetter: false,
      },
      {
        metric: 'requests per CPU-second',
        unit: 'req/cpu-s',
        devutil: d.requests / d.cpu,
        anchor: n.requests / n.cpu,
        higherIsBetter: true,
      },
    ]);
    const last = (t: Totals) => t.runs[t.runs.length - 1];
    const dl = last(d);
    const nl = last(n);
    if (dl && nl) console.log(`last round: ${saturation(dl, nl, 'nginx')}`);
  } finally {
    await dev2.close();
    await ngx?.close();
  }
}

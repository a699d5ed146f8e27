// File store: (1) the codec measurement behind the default (gzip vs brotli levels on a corpus of
// real text from this machine); (2) downloading a 100 MiB incompressible file from devutil vs nginx
// serving the same bytes statically, on 4 connections and on 1 (target >= 0.8x), and the same
// through nginx with DEVUTIL_FILES_ACCEL_REDIRECT (target >= 0.95x); (3) uploading a 100 MiB text corpus vs the
// chosen codec's CLI compressing the same bytes (target >= 0.8x its speed).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import zlib from 'node:zlib';
import { offloadLocations } from '../test/helpers/nginx.ts';
import {
  invalid,
  report,
  requireCommand,
  rssOf,
  saturation,
  startDevutil,
  startNginx,
  treeCpuSeconds,
  wrk,
} from './lib.ts';

const MiB = 1024 * 1024;
const ROOT = new URL('..', import.meta.url).pathname;
const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const LEVEL = Number(process.env['BENCH_BROTLI_LEVEL'] ?? 4);

/** Real text from this machine: JavaScript, JSON, type declarations, docs, markup, scripts. */
function corpus(limit: number): Buffer {
  const out: Buffer[] = [];
  let n = 0;
  const walk = (dir: string, re: RegExp, cap: number) => {
    const stack = [dir];
    let got = 0;
    while (stack.length && got < cap) {
      const p = stack.pop() as string;
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) for (const e of readdirSync(p).sort()) stack.push(join(p, e));
      else if (re.test(p) && st.size < 2 * MiB) {
        const b = readFileSync(p);
        out.push(b);
        got += b.length;
        n += b.length;
      }
    }
  };
  walk(join(ROOT, 'node_modules'), /\.(js|mjs|cjs)$/, limit * 0.45);
  walk(join(ROOT, 'node_modules'), /\.(json|md|d\.ts)$/, limit * 0.3);
  walk('/usr/share', /\.(txt|html|xml|css|csv|svg|po|pl|py)$/, limit * 0.25);
  return Buffer.concat(out, n);
}

function mibps(bytes: number, sec: number): number {
  return bytes / MiB / sec;
}

function time(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

// BENCH_ONLY=codec,download,upload runs those parts (the machine may be busy; rerun what suffered).
const only = (process.env['BENCH_ONLY'] ?? '').split(',').filter(Boolean);
const part = (name: string) => only.length === 0 || only.includes(name);

// (1) codec measurement
const sample = corpus(32 * MiB);
if (part('codec')) {
  console.log(
    `\n== codec measurement: ${(sample.length / MiB).toFixed(1)} MiB of text (node_modules, /usr/share) ==`,
  );
  console.log(`${'codec'.padEnd(10)} ${'saved'.padStart(8)} ${'MiB/s'.padStart(8)}`);
  const codecs: [string, () => Buffer][] = [
    ...[1, 6, 9].map((l): [string, () => Buffer] => [`gzip-${l}`, () => zlib.gzipSync(sample, { level: l })]),
    ...[1, 3, 4, 5, 6].map((q): [string, () => Buffer] => [
      `br-${q}`,
      () => zlib.brotliCompressSync(sample, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: q } }),
    ]),
  ];
  for (const [name, fn] of codecs) {
    let out: Buffer = Buffer.alloc(0);
    const sec = time(() => {
      out = fn();
    });
    const saved = ((1 - out.length / sample.length) * 100).toFixed(2);
    console.log(
      `${name.padEnd(10)} ${`${saved}%`.padStart(8)} ${mibps(sample.length, sec).toFixed(1).padStart(8)}`,
    );
  }
}

// (2) and (3) against a real devutil process
requireCommand('curl');
if (part('upload')) requireCommand('brotli');
const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-files-'));
const random = join(dir, 'random.bin');
writeFileSync(random, randomBytes(100 * MiB));
const text = join(dir, 'corpus.txt');
const big = corpus(100 * MiB);
writeFileSync(text, Buffer.concat([big, sample]).subarray(0, 100 * MiB));

// nginx workers run as nobody: let them read the file and devutil's body files.
chmodSync(dir, 0o755);
chmodSync(random, 0o644);
const dataDir = join(dir, 'data');
mkdirSync(dataDir, { mode: 0o755 });
const common = { DEVUTIL_LOG_LEVEL: 'error', DEVUTIL_FILES_RATE_LIMIT: 'off', DEVUTIL_DATA_DIR: dataDir };
const dev = await startDevutil(common);
// A second instance on the same store, answering with X-Accel-Redirect behind nginx (docs/deployment.md, nginx offload).
const devAccel = await startDevutil({ ...common, DEVUTIL_FILES_ACCEL_REDIRECT: '/_devutil_files/' });
const ngx = await startNginx(`location / { root ${dirname(random)}; }`, '', `/${basename(random)}`);
const front = await startNginx(
  `${offloadLocations(dataDir)}
   location / { proxy_pass http://devutil; proxy_http_version 1.1; proxy_set_header Connection ""; }`,
  `upstream devutil { server 127.0.0.1:${devAccel.port}; keepalive 16; }`,
  '/healthz',
);
try {
  execFileSync('curl', [
    '-sS',
    '-f',
    '-o',
    '/dev/null',
    '-F',
    `file=@${random}`,
    `${dev.url}/api/file/random`,
  ]);
  const urls = {
    devutil: `${dev.url}/api/file/random`,
    accel: `${front.url}/api/file/random`,
    nginx: `${ngx.url}/random.bin`,
  };
  if (part('download')) {
    const sent = execFileSync('curl', ['-sS', '-f', '-o', '/dev/null', '-D', '-', urls.accel], {
      encoding: 'utf8',
    });
    if (!/content-length: 104857600/i.test(sent)) throw new Error(`offloaded download is wrong:\n${sent}`);

    const conn = { durationSec, connections: 4 };
    for (const u of Object.values(urls)) wrk(u, { ...conn, durationSec: 2 });
    // Alternating, so drift in the machine's load hits all three alike.
    const d = wrk(urls.devutil, { ...conn, watch: { devutil: dev.pid } });
    const n = wrk(urls.nginx, { ...conn, watch: { anchor: ngx.pid } });
    const x = wrk(urls.accel, { ...conn, watch: { devutil: front.pid } });
    const n2 = wrk(urls.nginx, { ...conn, watch: { anchor: ngx.pid } });
    report('GET 100 MiB incompressible file, 4 connections', 'nginx static', [
      {
        metric: 'download, devutil alone',
        unit: 'MiB/s',
        devutil: d.bytesPerSec / MiB,
        anchor: n.bytesPerSec / MiB,
        higherIsBetter: true,
        target: 0.8,
        invalid: invalid({ devutil: d, nginx: n }),
      },
      {
        metric: 'download, X-Accel-Redirect',
        unit: 'MiB/s',
        devutil: x.bytesPerSec / MiB,
        anchor: n2.bytesPerSec / MiB,
        higherIsBetter: true,
        target: 0.95,
        invalid: invalid({ accel: x, nginx: n2 }),
      },
    ]);
    console.log(saturation(d, n, 'nginx'));
    console.log(`X-Accel-Redirect (the front nginx as "devutil"): ${saturation(x, n2, 'nginx')}`);

    // One connection, curl, alternating servers, best of five: steadier on a busy machine.
    const one = (url: string) => {
      const [speed, size] = execFileSync(
        'curl',
        ['-sS', '-f', '-o', '/dev/null', '-w', '%{speed_download} %{size_download}', url],
        { encoding: 'utf8' },
      )
        .split(' ')
        .map(Number);
      if (size !== 100 * MiB) throw new Error(`short download from ${url}: ${size} bytes`);
      return speed ?? Number.NaN;
    };
    const best = { devutil: 0, accel: 0, nginx: 0 };
    for (let i = 0; i < 5; i++)
      for (const k of ['devutil', 'nginx', 'accel'] as const) best[k] = Math.max(best[k], one(urls[k]));
    report('GET 100 MiB incompressible file, curl, 1 connection, best of 5', 'nginx static', [
      {
        metric: 'download, devutil alone',
        unit: 'MiB/s',
        devutil: best.devutil / MiB,
        anchor: best.nginx / MiB,
        higherIsBetter: true,
        target: 0.8,
      },
      {
        metric: 'download, X-Accel-Redirect',
        unit: 'MiB/s',
        devutil: best.accel / MiB,
        anchor: best.nginx / MiB,
        higherIsBetter: true,
        target: 0.95,
      },
    ]);

    // CPU per 100 MiB served: steadier than throughput when other jobs share the cores. The devutil
    // figure covers its whole process (every utility's threads); nginx's is its master and worker.
    const cpuPer = (pids: number[], url: string) => {
      const cpu = () => pids.reduce((sum, p) => sum + treeCpuSeconds(p), 0);
      const before = cpu();
      for (let i = 0; i < 5; i++) one(url);
      return (cpu() - before) / 5;
    };
    const nginxCpu = cpuPer([ngx.pid], urls.nginx);
    report('CPU seconds per 100 MiB download, 5 downloads', 'nginx static', [
      {
        metric: 'cpu, devutil alone',
        unit: 's',
        devutil: cpuPer([dev.pid], urls.devutil),
        anchor: nginxCpu,
        higherIsBetter: false,
      },
      {
        metric: 'cpu, X-Accel (nginx + devutil)',
        unit: 's',
        devutil: cpuPer([front.pid, devAccel.pid], urls.accel),
        anchor: nginxCpu,
        higherIsBetter: false,
      },
    ]);
  }

  // Upload: best of three, each to a new key (create-only), against brotli -q LEVEL on the same file.
  if (part('upload')) {
    const up: number[] = [];
    const baseRss = rssOf(dev.pid);
    let peakRss = baseRss;
    for (let i = 0; i < 3; i++) {
      const watch = setInterval(() => {
        peakRss = Math.max(peakRss, rssOf(dev.pid));
      }, 50);
      const t = process.hrtime.bigint();
      const out = await new Promise<string>((resolve, reject) => {
        import('node:child_process').then(({ execFile }) =>
          execFile(
            'curl',
            ['-sS', '-f', '-F', `file=@${text}`, `${dev.url}/api/file/corpus${i}`],
            (err, so) => (err ? reject(err) : resolve(so)),
          ),
        );
      });
      up.push(Number(process.hrtime.bigint() - t) / 1e9);
      clearInterval(watch);
      if (i === 0) console.log(`\nupload result: ${JSON.stringify(JSON.parse(out).data.file_info)}`);
    }
    const cli: number[] = [];
    for (let i = 0; i < 3; i++)
      cli.push(time(() => execFileSync('sh', ['-c', `brotli -q ${LEVEL} -c '${text}' > /dev/null`])));
    const cliGz: number[] = [];
    for (let i = 0; i < 3; i++)
      cliGz.push(time(() => execFileSync('sh', ['-c', `gzip -6 -c '${text}' > /dev/null`])));
    const size = statSync(text).size;
    report('upload 100 MiB text corpus (best of 3)', `brotli -q ${LEVEL}`, [
      {
        metric: 'speed',
        unit: 'MiB/s',
        devutil: mibps(size, Math.min(...up)),
        anchor: mibps(size, Math.min(...cli)),
        higherIsBetter: true,
        target: 0.8,
      },
    ]);
    report('context: the same upload vs gzip -6', 'gzip -6', [
      {
        metric: 'speed',
        unit: 'MiB/s',
        devutil: mibps(size, Math.min(...up)),
        anchor: mibps(size, Math.min(...cliGz)),
        higherIsBetter: true,
      },
    ]);
    console.log(
      `devutil RSS: ${(baseRss / MiB).toFixed(0)} MiB before the uploads, peak ${(peakRss / MiB).toFixed(0)} MiB during 100 MiB uploads`,
    );
  }
} finally {
  for (const p of [front, ngx, devAccel, dev]) await p.close();
  rmSync(dir, { recursive: true, force: true });
}

// (4) optional, BENCH_FILES_2G=1: a 2 GiB upload (a sparse file of zeros, so no disk is spent on the
// input) and its download, with the server's RSS before and at its peak.
if (process.env['BENCH_FILES_2G'] === '1') {
  const big = join(mkdtempSync(join(tmpdir(), 'devutil-bench-2g-')), 'zeros.bin');
  execFileSync('truncate', ['-s', '2G', big]);
  const srv = await startDevutil({ DEVUTIL_LOG_LEVEL: 'error', DEVUTIL_FILES_MAX_BYTES: '3GiB' });
  try {
    const base = rssOf(srv.pid);
    let peak = base;
    const watch = setInterval(() => {
      peak = Math.max(peak, rssOf(srv.pid));
    }, 100);
    const { execFile } = await import('node:child_process');
    const sh = (cmd: string) =>
      new Promise<string>((resolve, reject) =>
        execFile('sh', ['-c', cmd], (err, out) => (err ? reject(err) : resolve(out))),
      );
    const t = process.hrtime.bigint();
    const out = await sh(`curl -sS -f -F file=@${big} ${srv.url}/api/file/zeros`);
    const sec = Number(process.hrtime.bigint() - t) / 1e9;
    const same = await sh(`curl -sS -f ${srv.url}/api/file/zeros | cmp - ${big} && echo identical`);
    clearInterval(watch);
    console.log(`\n2 GiB upload in ${sec.toFixed(1)} s: ${JSON.stringify(JSON.parse(out).data.file_info)}`);
    console.log(
      `download ${same.trim()}; RSS ${(base / MiB).toFixed(0)} MiB before, peak ${(peak / MiB).toFixed(0)} MiB`,
    );
  } finally {
    await srv.close();
    rmSync(dirname(big), { recursive: true, force: true });
  }
}

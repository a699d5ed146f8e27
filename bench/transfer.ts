// Files the transfer.sh way: (1) `curl -T` of a 64 MiB incompressible file to PUT /<name> vs the
// seed's upload (`curl -F` to POST /api/file/<key>, the same store), with a bare Node server writing
// the PUT body to disk as the ceiling; (2) GET /zip/<k1,k2,k3> of three 32 MiB files vs a bare Node
// server streaming the same three files from disk into yazl (the ceiling: the zip work alone), with
// devutil's RSS before and after the zips (the archive is never held in memory).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/ports.ts';
import { header, report, requireCommand, rssOf, startDevutil } from './lib.ts';

const MiB = 1024 * 1024;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const ROOT = new URL('..', import.meta.url).pathname;

/** Best of RUNS: MiB/s of `curl args(run)` moving `bytes`. */
function curlRate(args: (run: number) => string[], bytes: number): number {
  let best = 0;
  for (let i = 0; i < RUNS; i++) {
    const out = execFileSync('curl', ['-fsS', '-o', '/dev/null', '-w', '%{time_total}', ...args(i)], {
      encoding: 'utf8',
    });
    best = Math.max(best, bytes / MiB / Number(out));
  }
  return best;
}

const BARE = `
const http = require('node:http'), fs = require('node:fs'), { pipeline } = require('node:stream');
const { ZipFile } = require(process.env.YAZL);
const files = process.env.FILES.split(',');
http.createServer((q, s) => {
  if (q.method === 'PUT') {
    pipeline(q, fs.createWriteStream(process.env.OUT), (e) => s.end(e ? 'fail' : 'ok'));
    return;
  }
  const z = new ZipFile();
  files.forEach((f, i) => z.addReadStreamLazy('f' + i, { compress: false, size: fs.statSync(f).size },
    (cb) => cb(null, fs.createReadStream(f))));
  z.end({}, (total) => { s.writeHead(200, { 'content-type': 'application/zip', 'content-length': total }); z.outputStream.pipe(s); });
}).listen(+process.env.PORT, '127.0.0.1');
`;

async function main(): Promise<void> {
  requireCommand('curl');
  header('files, the transfer.sh way: PUT upload and streamed zips');
  const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-transfer-'));
  const big = join(dir, 'big.bin');
  writeFileSync(big, randomBytes(64 * MiB));
  const parts = [0, 1, 2].map((i) => {
    const p = join(dir, `part-${i}.bin`);
    writeFileSync(p, randomBytes(32 * MiB));
    return p;
  });
  const port = await freePort();
  const bare = spawn(process.execPath, ['-e', BARE], {
    env: {
      ...process.env,
      PORT: String(port),
      OUT: join(dir, 'bare-out.bin'),
      FILES: parts.join(','),
      YAZL: join(ROOT, 'node_modules/yazl'),
    },
    stdio: 'ignore',
  });
  const dev = await startDevutil({
    DEVUTIL_FILES_MAX_BYTES: String(128 * MiB),
    DEVUTIL_FILES_RATE_LIMIT: '100000/min',
  });
  try {
    await new Promise((r) => setTimeout(r, 500));
    const bareUrl = `http://127.0.0.1:${port}`;
    const put = curlRate(() => ['-T', big, `${dev.url}/big.bin`], 64 * MiB);
    const post = curlRate((i) => ['-F', `file=@${big}`, `${dev.url}/api/file/seed-${i}`], 64 * MiB);
    const bareRate = curlRate(() => ['-T', big, `${bareUrl}/big.bin`], 64 * MiB);
    report('upload 64 MiB (incompressible)', 'POST /api/file', [
      { metric: 'curl -T to PUT /<name>', devutil: put, anchor: post, unit: 'MiB/s', higherIsBetter: true },
    ]);
    report('upload 64 MiB (incompressible)', 'bare Node', [
      {
        metric: 'curl -T to PUT /<name>',
        devutil: put,
        anchor: bareRate,
        unit: 'MiB/s',
        higherIsBetter: true,
      },
    ]);

    const form = parts.flatMap((p, i) => ['-F', `file=@${p};filename=part-${i}.bin`]);
    const links = execFileSync('curl', ['-fsS', ...form, `${dev.url}/`], { encoding: 'utf8' }).split('\n');
    const zipUrl = links[3] ?? '';
    const rssBefore = rssOf(dev.pid);
    const zip = curlRate(() => [zipUrl], 96 * MiB);
    const rssAfter = rssOf(dev.pid);
    const bareZip = curlRate(() => [bareUrl], 96 * MiB);
    report('zip of 3 x 32 MiB, streamed', 'bare Node+yazl', [
      { metric: 'GET /zip/<k1,k2,k3>', devutil: zip, anchor: bareZip, unit: 'MiB/s', higherIsBetter: true },
    ]);
    console.log(
      `devutil RSS ${(rssBefore / MiB).toFixed(0)} MiB before the zips, ${(rssAfter / MiB).toFixed(0)} MiB after ${RUNS} x 96 MiB`,
    );
  } finally {
    bare.kill();
    await dev.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

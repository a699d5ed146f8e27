// Files the transfer.sh way: (1) `curl -T` of a 64 MiB incompressible file to PUT /<name> vs the
// seed's upload (`curl -F` to POST /api/file/<key>, the same store), with a bare Node server writing
// the PUT body to disk as the ceiling; (2) GET /zip/<k1,k2,k3> of three 32 MiB files vs a bare Node
// server streaming the same three files from disk into yazl (the ceiling: the zip work alone), with
// devutil's RSS before and after the zips (the archive is never held in memory); (3) the same
// upload and its download with a password (OpenPGP, pgp.ts) against gpg encrypting and decrypting
// the same file.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

function hasGpg(): boolean {
  try {
    execFileSync('gpg', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

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

    // (3) Password-protected: the upload encrypts as it stores, the download decrypts as it sends,
    // against gpg doing the same to the same bytes (AES-256, no compression, file to file).
    if (hasGpg()) {
      const pw = ['-H', 'X-Encrypt-Password: bench password'];
      const sealedPut = curlRate(() => [...pw, '-T', big, `${dev.url}/big.bin`], 64 * MiB);
      const link = execFileSync('curl', ['-fsS', ...pw, '-T', big, `${dev.url}/big.bin`], {
        encoding: 'utf8',
      });
      const rssBeforeDec = rssOf(dev.pid);
      const sealedGet = curlRate(() => ['-H', 'X-Decrypt-Password: bench password', link.trim()], 64 * MiB);
      const rssAfterDec = rssOf(dev.pid);
      const home = join(dir, 'gnupg');
      mkdirSync(home, { mode: 0o700 });
      const gpg = (args: string[]) => {
        const t = performance.now();
        execFileSync(
          'gpg',
          ['--homedir', home, '--batch', '--yes', '--no-symkey-cache', '--pinentry-mode'].concat([
            'loopback',
            '--passphrase',
            'bench password',
            ...args,
          ]),
          { stdio: 'ignore' },
        );
        return 64 / ((performance.now() - t) / 1000);
      };
      const enc = join(dir, 'big.gpg');
      const gpgEnc = Math.max(
        ...Array.from({ length: RUNS }, () =>
          gpg([
            '--cipher-algo',
            'AES256',
            '--s2k-digest-algo',
            'SHA256',
            '--compress-algo',
            'none',
            '-o',
            enc,
            '-c',
            big,
          ]),
        ),
      );
      const gpgDec = Math.max(
        ...Array.from({ length: RUNS }, () => gpg(['-o', join(dir, 'big.out'), '-d', enc])),
      );
      report('password-protected 64 MiB (incompressible)', 'gpg', [
        {
          metric: 'curl -T with X-Encrypt-Password',
          devutil: sealedPut,
          anchor: gpgEnc,
          unit: 'MiB/s',
          higherIsBetter: true,
        },
        {
          metric: 'GET with X-Decrypt-Password',
          devutil: sealedGet,
          anchor: gpgDec,
          unit: 'MiB/s',
          higherIsBetter: true,
        },
      ]);
      report('password-protected 64 MiB (incompressible)', 'plain PUT', [
        {
          metric: 'curl -T with X-Encrypt-Password',
          devutil: sealedPut,
          anchor: put,
          unit: 'MiB/s',
          higherIsBetter: true,
        },
      ]);
      console.log(
        `devutil RSS ${(rssBeforeDec / MiB).toFixed(0)} MiB before the decrypted downloads, ${(rssAfterDec / MiB).toFixed(0)} MiB after ${RUNS} x 64 MiB`,
      );
    } else console.log('(gpg not installed: the password-protected figures are skipped)');
  } finally {
    bare.kill();
    await dev.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

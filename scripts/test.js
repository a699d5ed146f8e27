#!/usr/bin/env node
// `npm test [-- PATH...]`: every *.test.ts under src/ and test/ (or under the given paths) through
// node's own test runner (types stripped by Node 24/26 itself, by tsx on Node 20). Test files run in parallel processes; CI=true makes tests that
// need a system tool (redis-server, git, java, syncthing, chromium...) fail instead of skipping.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { TS_EXEC_ARGV } from './ts-loader.js';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const roots = args.length ? args : ['src', 'test'];

function walk(p, out) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return;
  }
  if (st.isFile()) {
    if (p.endsWith('.test.ts')) out.push(p);
    return;
  }
  for (const name of readdirSync(p)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    walk(join(p, name), out);
  }
}

const files = [];
for (const r of roots) walk(join(root, r), files);
files.sort();
if (files.length === 0) {
  console.error(`no test files under ${roots.join(', ')}`);
  process.exit(1);
}
mkdirSync(join(root, 'test-output'), { recursive: true });
// Fresh run-wide logs and secrets for the scan that follows the run (scripts/scan-logs.js).
for (const d of ['logs', 'secrets']) rmSync(join(root, 'test-output', d), { recursive: true, force: true });
const concurrency = process.env.DEVUTIL_TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
const child = spawn(
  process.execPath,
  [
    ...TS_EXEC_ARGV,
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    ...files.map((f) => relative(root, f)),
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
child.on('exit', (code, signal) => {
  const scan = spawnSync(process.execPath, [join(root, 'scripts/scan-logs.js')], { stdio: 'inherit' });
  process.exit(code || scan.status || (signal ? 1 : 0));
});

#!/usr/bin/env node
// `npm test [-- PATH...]`: the fast tier, every *.test.ts under src/ and test/ but the slow files
// scripts/test-tiers.js leaves to the whole suite (`npm run test:all`, or `--all`); `--runtime-sensitive`
// adds the files whose subject differs between Node runtimes (CI's leg on the older runtime); given
// paths run every test file under them whatever its tier (a path to a file is taken whatever its
// name); `--list` prints the selected files, longest first, and runs nothing. Each file is run by
// node itself, its tests by node:test with the spec reporter, without a `node --test` parent (types
// stripped by Node 24/26 itself). On Node 20 the tree is first compiled once into test-output/compiled/
// (scripts/test-compile.js) and each file runs as its .js there with plain node, reported by its .ts
// name; RUN_WITH_LOADER (scripts/test-tiers.js) lists files run with tsx instead, and
// DEVUTIL_TEST_COMPILED=0/1 turns the compiled mode off/on on any runtime. CI=true makes tests that
// need a system tool (redis-server, git, java, syncthing, chromium...) fail instead of skipping.
//
// Each file runs in a process group of its own, a few at a time, and has a time budget
// (DEVUTIL_TEST_FILE_TIMEOUT seconds, or --file-timeout=SEC): a file still running past it (a hook
// that never settles, a server or child a fixture left running) is stopped with everything it
// started and reported as timed out, and the run goes on. node --test alone waits for such a file
// for ever, and so would node itself: a file's process stays while a handle is open. A file's report
// is printed whole when it ends, so parallel files do not interleave.
//
// Small files run several to a process (scripts/test-batch.js; `--batch` asks it for given paths,
// DEVUTIL_TEST_BATCH=0 turns it off): starting node and loading the server cost more CPU than most
// small files' tests. Each file is still reported, timed and charged with its share of the CPU on its
// own; a batch that fails after its tests or runs past its budget fails all its files.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative, resolve as resolvePath } from 'node:path';
import { countsOf, fileCounts, sumCounts } from './test-counts.js';
import { busyMeter, cpuMeter, reapedCpuMs } from './test-cpu.js';
import { longestFirst, mayStart, nextLimit, takeNext } from './test-order.js';
import { ALONE, HEAVY, RUN_WITH_LOADER, RUNTIME_SENSITIVE, WHOLE_SUITE_ONLY } from './test-tiers.js';
import { COMPILED, NATIVE_TS } from './ts-loader.js';

const root = new URL('..', import.meta.url).pathname;
const DEFAULT_FILE_TIMEOUT_SEC = 600;
// After the budget: SIGTERM to the file's process (its report so far names the tests that ended), then
// SIGKILL to its whole process group this much later.
const KILL_GRACE_MS = 5000;
const HEARTBEAT_MS = 60_000;

const args = process.argv.slice(2);
const opt = (name) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? undefined : a.slice(name.length + 3);
};
const paths = args.filter((a) => !a.startsWith('--'));
const flag = (name) => args.includes(`--${name}`);
const known = ['all', 'runtime-sensitive', 'list', 'batch'];
const unknown = args.filter((a) => a.startsWith('--') && !a.includes('=') && !known.includes(a.slice(2)));
if (unknown.length) {
  console.error(
    `unknown option ${unknown.join(', ')} (known: ${known.map((k) => `--${k}`).join(', ')}, --file-timeout=SEC)`,
  );
  process.exit(2);
}
const fileTimeoutSec = Number(
  opt('file-timeout') ?? process.env.DEVUTIL_TEST_FILE_TIMEOUT ?? DEFAULT_FILE_TIMEOUT_SEC,
);
if (!(fileTimeoutSec > 0)) {
  console.error(
    'the per-file timeout (DEVUTIL_TEST_FILE_TIMEOUT / --file-timeout) must be a number of seconds > 0',
  );
  process.exit(2);
}
const concurrency = Math.max(
  1,
  Number(process.env.DEVUTIL_TEST_CONCURRENCY ?? Math.max(2, availableParallelism())) || 1,
);
// Up to this many at once while the cores sit idle (scripts/test-order.js, nextLimit): a file that
// waits on timers or other processes leaves CPU a further file can use. DEVUTIL_TEST_MAX_CONCURRENCY
// equal to DEVUTIL_TEST_CONCURRENCY keeps the number fixed.
const maxConcurrency = Math.max(
  concurrency,
  Number(process.env.DEVUTIL_TEST_MAX_CONCURRENCY ?? concurrency * 2) || concurrency,
);

function walk(p, out, explicit) {
  let st;
  try {
    st = statSync(p);
  } catch {
    if (explicit) console.error(`no such test path: ${relative(root, p) || p}`);
    return;
  }
  if (st.isFile()) {
    if (explicit || p.endsWith('.test.ts')) out.push(p);
    return;
  }
  for (const name of readdirSync(p)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    walk(join(p, name), out, false);
  }
}

const files = [];
for (const r of paths.length ? paths : ['src', 'test']) walk(join(root, r), files, paths.length > 0);
const found = [...new Set(files.map((f) => relative(root, f)))].sort();
// The tier applies to the whole tree only: a path named on the command line is run whatever its tier.
const tier = paths.length
  ? 'paths'
  : flag('all')
    ? 'all'
    : flag('runtime-sensitive')
      ? 'fast+runtime'
      : 'fast';
const unique = found.filter(
  (f) =>
    tier === 'paths' ||
    tier === 'all' ||
    !(f in WHOLE_SUITE_ONLY) ||
    (tier === 'fast+runtime' && f in RUNTIME_SENSITIVE),
);
if (unique.length === 0) {
  console.error(`no test files under ${(paths.length ? paths : ['src', 'test']).join(', ')}`);
  process.exit(1);
}

// DEVUTIL_TEST_OUTPUT moves it (the runner's own test runs a runner inside the run).
const outDir = process.env.DEVUTIL_TEST_OUTPUT ?? join(root, 'test-output');

// Longest files first (scripts/test-order.js), by this runtime's times (a file skipped on one runtime
// is quick there only): those of this checkout's last runs, else the seed committed in
// test/durations/ (a clean clone), which a CI run rewrites with its own times. Beside the wall times
// (ms per file, which older runners read), the files record each file's CPU ms under CPU_KEY, a key
// that is no file (an older runner ignores it and drops it when it rewrites the file).
const CPU_KEY = '$cpu';
const major = Number(process.versions.node.split('.')[0]);
const seedFile = join(root, 'test', 'durations', `node${major}.json`);
const localFile = join(outDir, `durations-node${major}.json`);
const readJson = (f) => {
  try {
    return JSON.parse(readFileSync(f, 'utf8'));
  } catch {
    return {};
  }
};
const seed = readJson(seedFile);
const local = readJson(localFile);
const durations = { ...seed, ...local, [CPU_KEY]: { ...seed[CPU_KEY], ...local[CPU_KEY] } };

// Batches: files that earlier runs timed as small (or, with --batch, every given file), at most
// BATCH_FILES of them and about BATCH_MS of their times to a process, longest first. Not batched:
// files never timed, heavy files, files with a budget of their own or run with the TypeScript loader,
// and those ALONE in scripts/test-tiers.js.
const BATCH_FILES = 10;
const BATCH_MS = 20_000;
const SMALL_MS = 20_000;
const SMALL_CPU_MS = 4_000;
const batching =
  process.env.DEVUTIL_TEST_BATCH !== '0' && (tier !== 'paths' || flag('batch')) && !flag('list');
const batchable = (f) =>
  !(f in HEAVY || f in RUN_WITH_LOADER || f in ALONE) &&
  !f.startsWith('..') &&
  budgetSec(join(root, f)) === fileTimeoutSec &&
  (tier === 'paths' ||
    (durations[f] !== undefined && durations[f] <= SMALL_MS && (durations[CPU_KEY][f] ?? 0) <= SMALL_CPU_MS));
/** Batch key (as queued) -> its files. */
const batches = new Map();
const order = { ...durations };
let singles = unique;
if (batching) {
  const small = longestFirst(unique.filter(batchable), durations);
  singles = unique.filter((f) => !small.includes(f));
  let group = [];
  let ms = 0;
  const close = () => {
    if (group.length === 0) return;
    if (group.length === 1) singles.push(group[0]);
    else {
      const key = `batch ${batches.size + 1}`;
      batches.set(key, group);
      order[key] = ms;
    }
    group = [];
    ms = 0;
  };
  for (const f of small) {
    group.push(f);
    ms += durations[f] ?? 0;
    if (group.length >= BATCH_FILES || ms >= BATCH_MS) close();
  }
  close();
}
const queue = longestFirst([...singles, ...batches.keys()], order);

if (flag('list')) {
  // Exit once the list is written: stdout to a pipe is asynchronous, process.exit() alone cuts it.
  process.stdout.write(`${queue.join('\n')}\n`, () => process.exit(0));
  await new Promise(() => {});
}

mkdirSync(outDir, { recursive: true });
// Fresh run-wide logs and secrets for the scan that follows the run (scripts/scan-logs.js), and a
// fresh PlantUML build directory: the first test server that renders compiles the worker and makes
// its class-data archive there, every later one of the run reuses them (test/helpers/server.ts).
const diagramsBuild = join(outDir, 'diagrams-build');
function secs(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}
for (const d of ['logs', 'secrets', 'diagrams-build'])
  rmSync(join(outDir, d), { recursive: true, force: true });
mkdirSync(diagramsBuild, { recursive: true });

// Compiled mode (scripts/test-compile.js): on a runtime without type stripping, the tree compiled once
// into test-output/compiled/, each file run there as plain JavaScript. DEVUTIL_TEST_COMPILED=1 forces
// it (the runner's own test), =0 turns it off. A runner that itself runs from a compiled copy (the
// runner's test, run compiled) runs its files in that copy.
const compileWanted = (process.env.DEVUTIL_TEST_COMPILED ?? (NATIVE_TS ? '0' : '1')) === '1';
let jsRoot;
if (COMPILED) jsRoot = root;
else if (compileWanted) {
  const t0 = Date.now();
  const cpu0 = reapedCpuMs() ?? 0;
  jsRoot = join(outDir, 'compiled');
  const r = spawnSync(process.execPath, [join(root, 'scripts/test-compile.js'), root, jsRoot], {
    encoding: 'utf8',
    env: { ...process.env, ESBUILD_WORKER_THREADS: '0', ESBUILD_MAX_BUFFER: String(256 << 20) },
  });
  if (r.status !== 0) {
    console.error(
      `compiling the tree for Node ${process.versions.node} failed:\n${r.stderr}${r.error ?? ''}`,
    );
    process.exit(1);
  }
  const cpu = (reapedCpuMs() ?? 0) - cpu0;
  console.log(
    `compiled ${r.stdout.trim()} .ts files into ${relative(root, jsRoot)}/ in ${secs(Date.now() - t0)} (CPU ${secs(cpu)})`,
  );
}
/** How `file` (relative to the root) is run: node's arguments before it, its path, the directory. */
function entryOf(file) {
  if (jsRoot === undefined || file in RUN_WITH_LOADER || file.startsWith('..'))
    return { argv: NATIVE_TS ? [] : ['--import', 'tsx'], path: file, cwd: root };
  return { argv: [], path: join(jsRoot, file.replace(/\.ts$/, '.js')), cwd: jsRoot };
}

const started = Date.now();
// Each file's CPU, read as its runner exits (scripts/test-cpu.js); a reading at any other child's
// exit (the PlantUML prebuild) is taken and thrown away, so that no file is charged with it.
const cpuSince = cpuMeter();
const running = new Map(); // file -> { child, t0 }
// Workers waiting for a file to end before they may take the next (scripts/test-order.js, mayStart).
const waiting = [];
const fileEnded = () => new Promise((resolve) => waiting.push(resolve));
const results = []; // { file, status: 'passed'|'failed'|'timed out', ms, output, batch? }
const batchResults = []; // { key, files, status, ms, cpu, output, perFile }

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

// NODE_TEST_CONTEXT is how node:test tells a file it runs under `node --test` (its tests then report
// to the parent in a format of their own, not with the spec reporter): a run started from inside a
// test (test/repo/runner.test.ts, perhaps run by hand with `node --test`) is a runner of its own.
const { NODE_TEST_CONTEXT: _ctx, ...inherited } = process.env;
const childEnv = {
  ...inherited,
  // V8's code cache (and on Node 24/26 the type-stripped sources) for every test file and what it
  // starts, in the directory bin/devutil.js uses: each file loads much the same modules, and parsing
  // them afresh took about a quarter of a small file's CPU. Node 20 has none (ignores the variable).
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache'),
  NODE_ENV: 'test',
  DEVUTIL_TEST_OUTPUT: outDir,
  DEVUTIL_TEST_DIAGRAMS_BUILD_DIR: diagramsBuild,
};

/**
 * A file's time budget: the run's, or longer where the file's opening lines declare one with
 * `// test-file-timeout: <seconds> s` (a test that builds a container image on a cold cache). A
 * declaration never shortens the run's budget.
 */
function budgetSec(file) {
  let head = '';
  try {
    head = readFileSync(file, 'utf8').slice(0, 4000);
  } catch {
    /* the runner reports the file's own failure */
  }
  const m = /^\/\/ test-file-timeout: (\d+) s$/m.exec(head);
  return Math.max(fileTimeoutSec, m ? Number(m[1]) : 0);
}

// A tier run (the files that render PlantUML are in it) gets the worker compiled and its class archive
// made in the background beside its first files, in a process group of its own that the run's end
// stops if it is still going; test servers that come first build for themselves meanwhile.
let prebuild;
if (tier !== 'paths') {
  const log = openSync(join(outDir, 'diagrams-build.log'), 'w');
  const e = entryOf('test/helpers/diagrams-build.ts');
  prebuild = spawn(process.execPath, [...e.argv, e.path, diagramsBuild], {
    cwd: e.cwd,
    detached: true,
    stdio: ['ignore', log, log],
    env: childEnv,
  });
  closeSync(log);
  prebuild.on('exit', () => cpuSince());
}

/**
 * Runs node with `argv` in `cwd` as key `key` of `running`, in a process group of its own, within
 * `budget` seconds: past it SIGTERM, then SIGKILL to the group. Resolves once it ended, with its exit,
 * whether it timed out, its wall ms, its CPU (itself and all it started and reaped) and its output.
 */
function runChild(key, argv, cwd, budget) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, argv, {
      cwd,
      detached: true, // its own process group: a timeout stops the file and everything it started
      stdio: ['ignore', 'pipe', 'pipe'],
      env: childEnv,
    });
    running.set(key, { child, t0 });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    let timedOut = false;
    let killer;
    let cpu;
    // 'exit' comes once the child is reaped, and before 'close' (which waits for its pipes).
    child.on('exit', () => {
      cpu = cpuSince();
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        child.kill('SIGTERM');
      } catch {
        /* gone */
      }
      killer = setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS);
    }, budget * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(killer);
      // Whatever the file started and left behind goes with it.
      killGroup(child, 'SIGKILL');
      running.delete(key);
      for (const wake of waiting.splice(0)) wake();
      const ok = code === 0 && !signal && !timedOut;
      resolve({ ok, timedOut, ms: Date.now() - t0, cpu, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

async function runFile(file) {
  const budget = budgetSec(file);
  // The file itself, not `node --test file`: node:test runs a file's tests when it is executed, and
  // `--test` costs a second Node process per file (the parent that spawns the file and reports for
  // it; it runs no --import, so tsx loads in the file's process only): measured on 15 fast-tier
  // files, 0.36 CPU-s per file on Node 26, 0.30 on Node 20. The exit code says the same: non-zero
  // on a failing test or hook, a top-level throw, an error after the tests.
  const e = entryOf(file);
  const r = await runChild(file, [...e.argv, '--test-reporter=spec', e.path], e.cwd, budget);
  const status = r.timedOut ? 'timed out' : r.ok ? 'passed' : 'failed';
  return { file, status, ms: r.ms, cpu: r.cpu, budget, output: r.output };
}

/** `file`'s part of a batch's spec output: from the end of the previous file's suite to the end of its own. */
function batchParts(output, names) {
  const parts = new Map();
  let from = 0;
  for (const name of names) {
    const esc = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const m = new RegExp(`^([✔✖﹣]) ${esc}(?: \\(([\\d.]+)ms\\))?.*$`, 'm').exec(output.slice(from));
    if (!m) {
      parts.set(name, { done: false, output: '' });
      continue;
    }
    const end = from + m.index + m[0].length;
    parts.set(name, {
      done: true,
      ok: m[1] !== '✖',
      ms: m[2] === undefined ? undefined : Number(m[2]),
      output: output.slice(from, end).trim(),
    });
    from = end;
  }
  return parts;
}

/** Runs `files` in one process (scripts/test-batch.js); resolves to one result per file and the batch's. */
async function runBatch(key, files) {
  const budget = fileTimeoutSec;
  const entries = files.map(entryOf);
  const cwd = entries[0].cwd;
  const names = entries.map((e) => relative(cwd, resolvePath(cwd, e.path)));
  const argv = [...entries[0].argv, '--test-reporter=spec', join(root, 'scripts/test-batch.js'), ...names];
  const { ok, timedOut, ms, cpu, output } = await runChild(key, argv, cwd, budget);
  const parts = batchParts(output, names);
  const blamed = [...parts.values()].some((q) => q.done && !q.ok);
  // Each file's share of the batch's CPU: its suite's time, plus an even part of the rest (node's
  // start, loading the modules, the files' evaluation).
  const inSuites = [...parts.values()].reduce((s, p) => s + (p.ms ?? 0), 0);
  const rest = Math.max(0, ms - inSuites) / files.length;
  const perFile = files.map((file, i) => {
    const p = parts.get(names[i]);
    // A file is as good as its suite's line says, unless the batch as a whole failed with no
    // suite to blame (an error after the tests, a handle left open past the budget).
    const status = timedOut ? 'timed out' : p.done && p.ok && (ok || blamed) ? 'passed' : 'failed';
    const share = ((p.ms ?? 0) + rest) / Math.max(ms, inSuites, 1);
    return {
      file,
      status,
      ms: Math.round(p.ms ?? ms / files.length),
      cpu: cpu === undefined ? undefined : cpu * share,
      budget,
      output: p.output,
      batch: key,
    };
  });
  const status = timedOut ? 'timed out' : ok ? 'passed' : 'failed';
  return { key, files, status, ms, cpu, budget, output, perFile };
}

function reportBatch(b) {
  const head =
    b.status === 'timed out'
      ? `✖ ${b.key} (${b.files.length} files) TIMED OUT after ${secs(b.ms)} (per-file timeout ${b.budget} s): stopped with everything it started`
      : `${b.status === 'passed' ? '✔' : '✖'} ${b.key} (${b.files.length} files in one process) ${b.status} in ${secs(b.ms)}` +
        (b.cpu === undefined ? '' : ` (CPU ${secs(b.cpu)})`);
  let text = `\n── ${head}\n${b.output.trimEnd()}\n`;
  for (const r of b.perFile)
    text +=
      `── ${r.status === 'passed' ? '✔' : '✖'} ${r.file} ${r.status} in ${secs(r.ms)}` +
      (r.cpu === undefined ? '' : ` (CPU ${secs(r.cpu)})`) +
      ` [${b.key}]\n`;
  process.stdout.write(text);
}

function report(r) {
  const head =
    r.status === 'timed out'
      ? `✖ ${r.file} TIMED OUT after ${secs(r.ms)} (per-file timeout ${r.budget} s): stopped with everything it started`
      : `${r.status === 'passed' ? '✔' : '✖'} ${r.file} ${r.status} in ${secs(r.ms)}` +
        (r.cpu === undefined ? '' : ` (CPU ${secs(r.cpu)})`);
  process.stdout.write(`\n── ${head}\n${r.output.trimEnd()}\n`);
  if (r.status === 'timed out') process.stdout.write(`✖ ${r.file} TIMED OUT\n`);
}

const heartbeat = setInterval(() => {
  if (running.size === 0) return;
  const now = Date.now();
  const list = [...running].map(([f, { t0 }]) => `${f} (${Math.round((now - t0) / 1000)} s)`);
  process.stdout.write(`… still running: ${list.join(', ')}\n`);
}, HEARTBEAT_MS);
heartbeat.unref();

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const { child } of running.values()) killGroup(child, 'SIGKILL');
    if (prebuild) killGroup(prebuild, 'SIGKILL');
    process.exit(130);
  });
}

// The number of files run at once: `concurrency`, raised while the machine idles (nextLimit), read
// every LIMIT_EVERY_MS; a raised limit wakes a waiting worker, a lowered one stops no running file.
const LIMIT_EVERY_MS = 3000;
let limit = concurrency;
let peak = concurrency;
const busySince = busyMeter();
const limiter = setInterval(() => {
  const busy = busySince();
  if (busy === undefined) return;
  const next = nextLimit(limit, busy, running.size >= limit, concurrency, maxConcurrency);
  if (next > limit) for (const wake of waiting.splice(0)) wake();
  limit = next;
  peak = Math.max(peak, limit);
}, LIMIT_EVERY_MS);
limiter.unref();

async function worker() {
  for (;;) {
    while (!mayStart(queue, running.keys(), HEAVY, limit)) await fileEnded();
    const file = takeNext(queue, running.keys(), HEAVY);
    if (file === undefined) return;
    if (batches.has(file)) {
      const b = await runBatch(file, batches.get(file));
      batchResults.push(b);
      results.push(...b.perFile);
      reportBatch(b);
      continue;
    }
    const r = await runFile(file);
    results.push(r);
    report(r);
  }
}
await Promise.all(Array.from({ length: Math.min(maxConcurrency, queue.length) }, worker));
clearInterval(heartbeat);
clearInterval(limiter);
if (prebuild) killGroup(prebuild, 'SIGKILL');

/** This run's times over `base`, without files that no longer exist; sorted for a readable diff. */
function merged(base) {
  const { [CPU_KEY]: baseCpu, ...all } = base;
  const cpu = { ...baseCpu };
  for (const r of results) {
    all[r.file] = r.ms;
    if (r.cpu !== undefined) cpu[r.file] = Math.round(r.cpu);
  }
  const kept = (o) =>
    Object.fromEntries(
      Object.keys(o)
        .filter((f) => existsSync(join(root, f)))
        .sort()
        .map((f) => [f, o[f]]),
    );
  const out = kept(all);
  if (Object.keys(cpu).length) out[CPU_KEY] = kept(cpu);
  return `${JSON.stringify(out, null, 2)}\n`;
}
try {
  writeFileSync(localFile, merged(durations));
  // CI refreshes the committed seed in its checkout (a clean clone starts from it).
  if (process.env.CI === 'true' && tier !== 'paths') {
    mkdirSync(join(root, 'test', 'durations'), { recursive: true });
    writeFileSync(seedFile, merged(seed));
  }
} catch {
  /* a read-only checkout still gets its results */
}

const bad = results.filter((r) => r.status !== 'passed').sort((a, b) => a.file.localeCompare(b.file));
// A batch prints one set of counts for its files.
const counts = sumCounts([
  ...results.filter((r) => r.batch === undefined).map((r) => fileCounts(r.output, r.status === 'failed')),
  ...batchResults.map((b) => fileCounts(b.output, b.status === 'failed')),
]);
const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 20);
console.log(`\n${slowest.length} slowest files:`);
for (const r of slowest) console.log(`  ${secs(r.ms).padStart(8)}  ${r.file}`);
const hungriest = results
  .filter((r) => r.cpu !== undefined)
  .sort((a, b) => b.cpu - a.cpu)
  .slice(0, 20);
if (hungriest.length) {
  const total = results.reduce((s, r) => s + (r.cpu ?? 0), 0);
  console.log(
    `\n${hungriest.length} most CPU-hungry files (CPU of the file and all it started; all files ${secs(total)}):`,
  );
  for (const r of hungriest) console.log(`  ${secs(r.cpu).padStart(8)}  ${r.file}`);
}
const skipping = results
  .map((r) => ({
    file: r.file,
    n: r.batch === undefined ? (countsOf(r.output).skipped ?? 0) : (r.output.match(/^\s+﹣ /gm) ?? []).length,
  }))
  .filter((x) => x.n > 0);
if (skipping.length) console.log(`skipped tests: ${skipping.map((x) => `${x.file} ${x.n}`).join(', ')}`);
console.log(
  `\n${results.length} test files in ${secs(Date.now() - started)} (${tier === 'paths' ? 'given paths' : `tier ${tier}`}, ` +
    `${concurrency === peak ? concurrency : `${concurrency} to ${peak}`} at a time, ${batchResults.reduce((n, b) => n + b.files.length, 0)} of them in ${batchResults.length} batches, per-file timeout ${fileTimeoutSec} s): ` +
    `${results.length - bad.length} passed, ${bad.filter((r) => r.status === 'failed').length} failed, ` +
    `${bad.filter((r) => r.status === 'timed out').length} timed out`,
);
console.log(
  `${counts.tests} tests: ${counts.pass} passed, ${counts.fail} failed, ${counts.skipped} skipped, ` +
    `${counts.cancelled} cancelled, ${counts.todo} todo` +
    (counts.unknown ? ` (and ${counts.unknown} files that printed no counts)` : ''),
);
for (const r of bad) {
  console.log(`✖ ${r.file}: ${r.status}`);
  if (r.batch !== undefined) {
    // Its failing tests, as its part of the batch's output shows them.
    for (const line of r.output.split('\n')) if (/^\s+✖ /.test(line)) console.log(`    ${line.trim()}`);
    if (r.status !== 'timed out' && !/^\s+✖ /m.test(r.output))
      console.log(`    (${r.batch} failed outside its files' tests: see its output)`);
    continue;
  }
  // The runner's own list of failing tests, when the file got as far as printing it.
  const i = r.output.lastIndexOf('✖ failing tests:');
  if (i !== -1)
    for (const line of r.output.slice(i).split('\n').slice(1)) {
      if (/^\s*✖ /.test(line)) console.log(`    ${line.trim()}`);
    }
}

const scan = spawnSync(process.execPath, [join(root, 'scripts/scan-logs.js')], {
  stdio: 'inherit',
  env: { ...process.env, DEVUTIL_TEST_OUTPUT: outDir },
});
process.exit(bad.length || scan.status ? 1 : 0);

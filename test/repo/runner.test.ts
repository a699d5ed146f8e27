// `npm test` itself (scripts/test.js): a file that hangs is stopped at the per-file timeout together
// with what it started, the run goes on with the other files and fails, and failures are listed; a
// file may declare a longer budget of its own; each file's CPU is measured and recorded; each file is
// run by node itself (no `node --test` parent), and fails on whatever failed it under `--test`; on
// Node 20 (or with DEVUTIL_TEST_COMPILED=1) each file runs compiled, still reported by its .ts name.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { tempDir } from '../helpers/server.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FIX = 'test/fixtures/runner';

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.pid) process.kill(-c.pid, 'SIGKILL');
});

/** Runs scripts/test.js on the given files with its own output directory. */
function runner(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; pid: number }> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts/test.js'), ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DEVUTIL_TEST_OUTPUT: tempDir('devutil-runner-'),
      DEVUTIL_TEST_CONCURRENCY: '2',
      ...env,
    },
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (c) => {
    out += c;
  });
  child.stderr?.on('data', (c) => {
    out += c;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, pid: child.pid ?? 0 })));
}

/** True while `pid` runs: a killed process waiting to be reaped (state Z) has stopped. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

// The runner's own deadline is what these tests are about: if it hung, this file's timeout fails them.
// Each case runs a runner of its own (its own output directory and fixtures), and they mostly wait
// for the runner's budgets to pass: they run at once, so the file takes its longest case.
describe('npm test runner', { timeout: 120_000, concurrency: true }, () => {
  it('stops a hung two-instance start at the per-file timeout, with the instance it left running', async () => {
    const pidFile = join(tempDir(), 'pid');
    // Long enough for a loaded machine to start the file (tsx on Node 20 can take seconds), and the
    // file alone: a passing file beside it could itself take longer than a short budget.
    const r = await runner(['--file-timeout=20', `${FIX}/hung-start.ts`], {
      RUNNER_FIXTURE_PID_FILE: pidFile,
    });
    assert.equal(r.code, 1, r.out);
    assert.match(
      r.out,
      /✖ test\/fixtures\/runner\/hung-start\.ts TIMED OUT after [\d.]+ s \(per-file timeout 20 s\)/,
    );
    assert.match(r.out, /1 test files .*: 0 passed, 0 failed, 1 timed out/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(pid > 0);
    assert.equal(alive(pid), false, 'the child the hung file started was stopped with it');
  });

  it('gives a file the longer budget its opening lines declare, and no other file', async () => {
    const r = await runner([
      '--file-timeout=3',
      `${FIX}/slow-declared.ts`,
      `${FIX}/slow.ts`,
      `${FIX}/leaves-handle.ts`,
    ]);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /✔ test\/fixtures\/runner\/slow-declared\.ts passed/);
    assert.match(
      r.out,
      /✖ test\/fixtures\/runner\/slow\.ts TIMED OUT after [\d.]+ s \(per-file timeout 3 s\)/,
    );
    // Its test passed, but a timer it left keeps its process: a file is done when its process ends.
    assert.match(r.out, /✖ test\/fixtures\/runner\/leaves-handle\.ts TIMED OUT after/);
    assert.match(r.out, /3 test files .*: 1 passed, 0 failed, 2 timed out/);
  });

  it('runs each file as its own child, fails the run on a file that fails a test, throws, fails late or fails a hook, and lists the failing test at the end', async () => {
    const pidFile = join(tempDir(), 'pid');
    const failing = ['fails', 'throws', 'rejects-late', 'throws-late', 'before-fails'];
    const r = await runner(
      [...failing, 'skips-all', 'parent', 'passes'].map((f) => `${FIX}/${f}.ts`),
      { RUNNER_FIXTURE_PID_FILE: pidFile },
    );
    assert.equal(r.code, 1, r.out);
    // No `node --test` between the runner and the file: that extra process per file cost CPU.
    assert.equal(Number(readFileSync(pidFile, 'utf8')), r.pid, 'the file is a child of the runner');
    const summary = r.out.slice(r.out.lastIndexOf('test files in'));
    for (const f of failing) assert.match(summary, new RegExp(`✖ test/fixtures/runner/${f}\\.ts: failed\n`));
    assert.match(summary, /✖ test\/fixtures\/runner\/fails\.ts: failed\n\s+✖ compares two different numbers/);
    assert.match(r.out, /✔ test\/fixtures\/runner\/passes\.ts passed/);
    assert.match(r.out, /8 test files .*: 3 passed, 5 failed, 0 timed out/);
    // A file that failed outside its tests (throws, rejects-late, throws-late) counts as one failing test, as
    // under `node --test`; the hook's test is cancelled; the skipped file's two skips count.
    assert.match(r.out, /\n11 tests: 4 passed, 4 failed, 2 skipped, 1 cancelled, 0 todo\n/);
    assert.match(r.out, /skipped tests: test\/fixtures\/runner\/skips-all\.ts 2\n/);
  });

  it('passes a run whose files all pass, and counts its tests and skips', async () => {
    const r = await runner([`${FIX}/passes.ts`, `${FIX}/skips.ts`]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /2 test files .*: 2 passed, 0 failed, 0 timed out/);
    assert.match(r.out, /\n3 tests: 2 passed, 0 failed, 1 skipped, 0 cancelled, 0 todo\n/);
    assert.match(r.out, /skipped tests: test\/fixtures\/runner\/skips\.ts 1\n/);
    assert.match(r.out, /2 slowest files:\n {2,}[\d.]+ s {2}test\/fixtures\/runner\/(passes|skips)\.ts\n/);
  });

  it('runs each file compiled to JavaScript where asked (Node 20), reports it by its .ts name and fails a failing one', async () => {
    const where = join(tempDir(), 'where.json');
    const r = await runner([`${FIX}/where.ts`, `${FIX}/fails.ts`], {
      DEVUTIL_TEST_COMPILED: '1',
      RUNNER_FIXTURE_WHERE_FILE: where,
    });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /✔ test\/fixtures\/runner\/where\.ts passed/);
    assert.match(r.out, /2 test files .*: 1 passed, 1 failed, 0 timed out/);
    const summary = r.out.slice(r.out.lastIndexOf('test files in'));
    assert.match(summary, /✖ test\/fixtures\/runner\/fails\.ts: failed\n\s+✖ compares two different numbers/);
    const ran = JSON.parse(readFileSync(where, 'utf8'));
    // The tree has no where.js: the runner compiled it (scripts/test-compile.js) and ran that.
    assert.match(ran.url, /\/test\/fixtures\/runner\/where\.js$/, 'the compiled file ran');
    assert.deepEqual(
      ran.execArgv.filter((a: string) => a.includes('tsx')),
      [],
      'without a TypeScript loader',
    );
  });

  it('runs small files several to a process, each with its own hooks and environment, and reports each file', async () => {
    const orderFile = join(tempDir(), 'order');
    const r = await runner(
      ['--batch', ...['hooks-a', 'hooks-b', 'fails', 'skips', 'passes'].map((f) => `${FIX}/${f}.ts`)],
      {
        RUNNER_FIXTURE_ORDER_FILE: orderFile,
        DEVUTIL_TEST_CONCURRENCY: '1',
        DEVUTIL_TEST_MAX_CONCURRENCY: '1',
      },
    );
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /── ✖ batch 1 \(5 files in one process\) failed in /);
    // hooks-a's beforeEach ran for its own test only, its after once its tests ended, before hooks-b.
    assert.equal(readFileSync(orderFile, 'utf8'), 'a beforeEach\na test\na after\nb test\n');
    for (const f of ['hooks-a', 'hooks-b', 'skips', 'passes'])
      assert.match(
        r.out,
        new RegExp(
          `── ✔ test/fixtures/runner/${f}\\.ts passed in [\\d.]+ s \\(CPU [\\d.]+ s\\) \\[batch 1\\]`,
        ),
      );
    assert.match(r.out, /── ✖ test\/fixtures\/runner\/fails\.ts failed in /);
    assert.match(r.out, /5 test files .*5 of them in 1 batches.*: 4 passed, 1 failed, 0 timed out/);
    assert.match(r.out, /\n6 tests: 4 passed, 1 failed, 1 skipped, 0 cancelled, 0 todo\n/);
    assert.match(r.out, /skipped tests: test\/fixtures\/runner\/skips\.ts 1\n/);
    const summary = r.out.slice(r.out.lastIndexOf('test files in'));
    assert.match(summary, /✖ test\/fixtures\/runner\/fails\.ts: failed\n\s+✖ compares two different numbers/);
  });

  it('fails the files of a batch whose process fails after their tests, and stops a batch that outlives its budget', async () => {
    const late = await runner(['--batch', `${FIX}/throws-late.ts`, `${FIX}/passes.ts`]);
    assert.equal(late.code, 1, late.out);
    // Both suites passed, but the batch's process failed after them: no file can be cleared.
    assert.match(late.out, /2 test files .*: 0 passed, 2 failed, 0 timed out/);
    const hung = await runner([
      '--batch',
      '--file-timeout=10',
      `${FIX}/leaves-handle.ts`,
      `${FIX}/passes.ts`,
    ]);
    assert.equal(hung.code, 1, hung.out);
    assert.match(hung.out, /✖ batch 1 \(2 files\) TIMED OUT after/);
    assert.match(hung.out, /2 test files .*: 0 passed, 0 failed, 2 timed out/);
  });

  it('charges each file with its own CPU and that of what it started, with files running at once', async () => {
    const out = tempDir('devutil-runner-');
    const r = await runner([`${FIX}/burns.ts`, `${FIX}/passes.ts`], { DEVUTIL_TEST_OUTPUT: out });
    assert.equal(r.code, 0, r.out);
    assert.match(
      r.out,
      /\n2 most CPU-hungry files \(.*\):\n {2,}[\d.]+ s {2}test\/fixtures\/runner\/burns\.ts\n/,
    );
    const major = process.versions.node.split('.')[0];
    const recorded = JSON.parse(readFileSync(join(out, `durations-node${major}.json`), 'utf8'));
    // Wall times stay where older runners read them; CPU ms sit under a key that is no file.
    assert.equal(typeof recorded['test/fixtures/runner/burns.ts'], 'number');
    const cpu = recorded.$cpu;
    // The 1.5 s the file's grandchild burnt, and the runner's own start.
    assert.ok(cpu['test/fixtures/runner/burns.ts'] >= 1500, JSON.stringify(cpu));
    assert.ok(
      cpu['test/fixtures/runner/passes.ts'] < cpu['test/fixtures/runner/burns.ts'],
      JSON.stringify(cpu),
    );
  });
});

// The suite's own rules: every test file asserts something (a file that only runs code and prints,
// like a committed debug run, proves nothing and costs every run its time); the tier lists the
// runner reads (scripts/test-tiers.js) name test files that exist, each with its reason; and the
// tiers select what the README says: `npm test` every file but the whole-suite ones, `--all` every
// file, `--runtime-sensitive` the fast tier and the runtime-sensitive files; and .ci/run's legs
// together run every test file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { longestFirst, mayStart, nextLimit, takeNext } from '../../scripts/test-order.js';
import {
  ALONE,
  HEAVY,
  RUN_WITH_LOADER,
  RUNTIME_SENSITIVE,
  WHOLE_SUITE_ONLY,
} from '../../scripts/test-tiers.js';

const ROOT = join(import.meta.dirname, '..', '..');

function testFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) testFiles(p, out);
    else if (name.endsWith('.test.ts')) out.push(relative(ROOT, p));
  }
  return out;
}

/**
 * Why a test file asserts nothing ('' when it does): it has no test, or it imports nothing from
 * node:assert, or never uses what it imports. Comments on lines of their own do not count as uses.
 * A file whose cases live in modules it imports (`read` gives a relative import's source) asserts
 * when one of those modules has tests that assert.
 */
export function noAssertion(
  source: string,
  read: (spec: string) => string | undefined = () => undefined,
): string {
  const own = assertsItself(source);
  if (own === '') return '';
  for (const m of source.matchAll(/^import\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    const text = m[1] ? read(m[1]) : undefined;
    if (text !== undefined && assertsItself(text) === '') return '';
  }
  return own;
}

function assertsItself(source: string): string {
  const code = source
    .split('\n')
    .filter((l) => !l.trim().startsWith('//'))
    .join('\n')
    .replace(/^\s*\/\*[\s\S]*?\*\//gm, '');
  if (!/\b(?:it|test)(?:\.only|\.skip|\.todo)?\s*\(/.test(code)) return 'no test in it';
  const imports = [...code.matchAll(/import\s+([^;]*?)\s+from\s+['"]node:assert(?:\/strict)?['"];?/g)];
  if (imports.length === 0) return 'nothing imported from node:assert';
  const names = imports.flatMap((m) =>
    (m[1] ?? '')
      .replace(/[{}]/g, ',')
      .split(',')
      .map((n) => n.trim().replace(/^\*\s+as\s+/, ''))
      .map((n) => n.split(/\s+as\s+/).at(-1) ?? '')
      .filter((n) => /^\w+$/.test(n) && n !== 'type'),
  );
  const rest = imports.reduce((text, m) => text.replace(m[0], ''), code);
  const used = names.some((n) => new RegExp(`\\b${n}\\s*(?:\\.\\s*\\w+\\s*)?\\(`).test(rest));
  return used ? '' : `never calls ${names.join(', ') || 'node:assert'}`;
}

/**
 * The test legs of a CI script (`[PATH="$NODE26_BIN:$PATH"] run_leg [--checks|--reuse] npm ...` lines): on
 * which Node (`26`, or '' for the machine's) and with which arguments scripts/test.js runs.
 */
export function ciLegs(script: string, scripts: Record<string, string>): { node: string; args: string[] }[] {
  const legs = [];
  for (const m of script.matchAll(
    /^(?:PATH="\$NODE(\d+)_BIN:\$PATH"\s+)?run_leg\s+(?:--(?:checks|reuse)\s+)?npm\s+(.+)$/gm,
  )) {
    const words = (m[2] ?? '').trim().split(/\s+/);
    const dash = words.indexOf('--');
    const extra = dash === -1 ? [] : words.slice(dash + 1);
    const head = dash === -1 ? words : words.slice(0, dash);
    const name = head[0] === 'run' ? head[1] : head[0];
    const command = (name && scripts[name]) || '';
    const runner = /^node scripts\/test\.js\b(.*)$/.exec(command);
    if (!runner) throw new Error(`CI runs npm ${m[2]}: not the test runner (${command || 'no such script'})`);
    legs.push({
      node: m[1] ?? '',
      args: [...(runner[1] ?? '').trim().split(/\s+/).filter(Boolean), ...extra],
    });
  }
  return legs;
}

describe('the test suite', { timeout: 120_000 }, () => {
  const files = [...testFiles(join(ROOT, 'src')), ...testFiles(join(ROOT, 'test'))].sort();

  it('has no test file without an assertion', () => {
    const source = (f: string) => readFileSync(join(ROOT, f), 'utf8');
    const bare = files
      .map((f) => [
        f,
        noAssertion(source(f), (spec) => {
          const p = join(ROOT, dirname(f), spec);
          return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
        }),
      ])
      .filter(([, why]) => why !== '')
      .map(([f, why]) => `${f}: ${why}`);
    assert.deepEqual(bare, []);
  });

  it('tells a file without an assertion from one with', () => {
    const debugRun = `import { it } from 'node:test';\n// assert.equal(1, 1)\n/** assert(x) */\nit('debug', async () => {\n  console.log(await run());\n});\n`;
    assert.equal(noAssertion(debugRun), 'nothing imported from node:assert');
    const unused = `import assert from 'node:assert/strict';\nimport { it } from 'node:test';\nit('x', () => run());\n`;
    assert.equal(noAssertion(unused), 'never calls assert');
    assert.equal(noAssertion(`import assert from 'node:assert';\nconsole.log(assert);\n`), 'no test in it');
    const strict = `import assert from 'node:assert/strict';\nimport { it } from 'node:test';\nit('x', () => assert.equal(f(), 2));\n`;
    assert.equal(noAssertion(strict), '');
    const named = `import { deepEqual as same, ok } from 'node:assert/strict';\nimport { it } from 'node:test';\nit('x', () => same(f(), []));\n`;
    assert.equal(noAssertion(named), '');
    const callable = `import assert from 'node:assert';\nimport { test } from 'node:test';\ntest('x', () => { assert(f()); });\n`;
    assert.equal(noAssertion(callable), '');
    // Cases in an imported module count; an imported helper without tests does not.
    const composed = `import { describe } from 'node:test';\nimport { cases } from './cases.ts';\nimport { start } from '../helpers/server.ts';\ndescribe('x', () => cases());\n`;
    const modules: Record<string, string> = {
      './cases.ts': strict,
      '../helpers/server.ts': unused.replace("it('x', () => run());", ''),
    };
    assert.equal(
      noAssertion(composed, (spec) => modules[spec]),
      '',
    );
    assert.equal(
      noAssertion(composed, (spec) => (spec === './cases.ts' ? debugRun : modules[spec])),
      'no test in it',
    );
  });

  it('names in its tier lists only test files that exist, each with a reason', () => {
    for (const [name, list] of [
      ['WHOLE_SUITE_ONLY', WHOLE_SUITE_ONLY],
      ['RUNTIME_SENSITIVE', RUNTIME_SENSITIVE],
      ['HEAVY', HEAVY],
      ['RUN_WITH_LOADER', RUN_WITH_LOADER],
      ['ALONE', ALONE],
    ] as const) {
      const wrong = Object.entries(list)
        .filter(([f, why]) => !f.endsWith('.test.ts') || !existsSync(join(ROOT, f)) || why.trim().length < 10)
        .map(([f]) => f);
      assert.deepEqual(wrong, [], `${name} in scripts/test-tiers.js: gone, not a test file, or no reason`);
    }
  });

  it('runs the longest files first, untimed ones before them, and the shortest beside a heavy file', () => {
    const times = {
      'a.test.ts': 5,
      'big.test.ts': 900,
      'mid.test.ts': 60,
      'tiny.test.ts': 1,
      'heavy2.test.ts': 300,
    };
    const queue = longestFirst(Object.keys(times).concat('new.test.ts'), times);
    assert.deepEqual(queue, [
      'new.test.ts',
      'big.test.ts',
      'heavy2.test.ts',
      'mid.test.ts',
      'a.test.ts',
      'tiny.test.ts',
    ]);
    const heavy = { 'big.test.ts': 'x', 'heavy2.test.ts': 'y' };
    const running = new Set<string>();
    const take = () => {
      const f = takeNext(queue, running, heavy);
      if (f) running.add(f);
      return f;
    };
    assert.equal(take(), 'new.test.ts');
    assert.equal(take(), 'big.test.ts');
    running.delete('new.test.ts');
    // Beside big: the shortest, never the other heavy file.
    assert.equal(take(), 'tiny.test.ts');
    running.delete('tiny.test.ts');
    assert.equal(take(), 'a.test.ts');
    running.delete('a.test.ts');
    assert.equal(take(), 'mid.test.ts');
    running.delete('mid.test.ts');
    assert.equal(take(), 'heavy2.test.ts', 'heavy files only are left');
    running.clear();
    assert.equal(take(), undefined);
  });

  it('runs three at a time, but a heavy file beside one other only and never beside another heavy one', () => {
    const heavy = { 'big.test.ts': 'x', 'heavy2.test.ts': 'y' };
    const may = (queue: string[], running: string[]) => mayStart(queue, running, heavy, 3);
    assert.equal(may(['a.test.ts'], ['b.test.ts', 'c.test.ts']), true, 'a third light file');
    assert.equal(may(['a.test.ts'], ['b.test.ts', 'c.test.ts', 'd.test.ts']), false, 'no fourth');
    // A heavy file next waits until one other file runs, then takes the machine with one companion.
    assert.equal(may(['big.test.ts', 'a.test.ts'], ['b.test.ts', 'c.test.ts']), false);
    assert.equal(may(['big.test.ts', 'a.test.ts'], ['b.test.ts']), true);
    assert.equal(may(['a.test.ts'], ['big.test.ts']), true);
    assert.equal(may(['a.test.ts'], ['big.test.ts', 'b.test.ts']), false, 'a heavy file and one other only');
    // The other heavy file waits for the first to end, even with a slot free.
    assert.equal(may(['heavy2.test.ts'], ['big.test.ts']), false);
    assert.equal(may(['heavy2.test.ts'], ['b.test.ts']), true);
    assert.equal(may([], ['big.test.ts', 'b.test.ts']), true, 'nothing left: the worker ends');
    // Two at a time (the default on two cores) behaves as before.
    assert.equal(mayStart(['a.test.ts'], ['b.test.ts'], heavy, 2), true);
    assert.equal(mayStart(['a.test.ts'], ['b.test.ts', 'c.test.ts'], heavy, 2), false);
  });

  it('runs alone every test file that hooks module loading (it would change the other files of its batch)', () => {
    const hooking = testFiles(join(ROOT, 'src'))
      .concat(testFiles(join(ROOT, 'test')))
      .filter((f) =>
        /\bregisterHooks\s*(\?\.)?\(|\)\.registerHooks\b|\bmodule\.register\(/.test(
          readFileSync(join(ROOT, f), 'utf8'),
        ),
      );
    assert.ok(hooking.length > 0, 'the check finds the files it is about');
    // (A call or a read off the module; `'registerHooks' in module` is a feature check.)
    const unbatched = { ...ALONE, ...RUN_WITH_LOADER, ...HEAVY };
    assert.deepEqual(
      hooking.filter((f) => !(f in unbatched)),
      [],
      'ALONE in scripts/test-tiers.js',
    );
  });

  it('runs more files at once while the cores idle with every slot taken, and fewer again when they are saturated', () => {
    // base 3, max 6
    assert.equal(nextLimit(3, 0.5, true, 3, 6), 4, 'idle half the time, slots full: one more');
    assert.equal(nextLimit(3, 0.5, false, 3, 6), 3, 'idle because a slot is free: no more');
    assert.equal(nextLimit(6, 0.2, true, 3, 6), 6, 'never past the maximum');
    assert.equal(nextLimit(5, 0.85, true, 3, 6), 5, 'busy enough: kept');
    assert.equal(nextLimit(5, 0.99, true, 3, 6), 4, 'saturated: one fewer');
    assert.equal(nextLimit(3, 0.99, true, 3, 6), 3, 'never below the base');
    assert.equal(nextLimit(3, 0.1, true, 3, 3), 3, 'a maximum equal to the base keeps it fixed');
  });

  const list = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/test.js', '--list', ...args], {
      cwd: ROOT,
    });
    return stdout.split('\n').filter(Boolean).sort();
  };

  it("runs every test file on CI: the union of .ci/run's legs is the whole tree", async () => {
    const legs = ciLegs(
      readFileSync(join(ROOT, '.ci/run'), 'utf8'),
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts,
    );
    assert.deepEqual(
      legs.map((l) => l.node),
      ['26', ''],
      'a Node 26 leg (the current LTS) and one on the machine Node',
    );
    assert.ok(
      legs.some((l) => l.args.includes('--all')),
      'one leg runs the whole suite',
    );
    const ran = new Set((await Promise.all(legs.map((l) => list(...l.args)))).flat());
    assert.deepEqual(
      files.filter((f) => !ran.has(f)),
      [],
      'test files no CI leg runs',
    );
  });

  it('reads the legs out of a CI script as the runner would get them', () => {
    const script = `PATH="$NODE26_BIN:$PATH" run_leg --checks npm run test:all\nrun_leg --reuse npm test -- --runtime-sensitive\n# run_leg npm test\n`;
    const scripts = { test: 'node scripts/test.js', 'test:all': 'node scripts/test.js --all' };
    assert.deepEqual(ciLegs(script, scripts), [
      { node: '26', args: ['--all'] },
      { node: '', args: ['--runtime-sensitive'] },
    ]);
    assert.throws(() => ciLegs('run_leg npm run nope\n', scripts), /not the test runner/);
  });

  it('selects the fast tier, the whole suite and the runtime-sensitive addition as documented', async () => {
    const [fast, all, runtime] = await Promise.all([list(), list('--all'), list('--runtime-sensitive')]);
    assert.deepEqual(all, files, '--all runs every test file');
    const whole = Object.keys(WHOLE_SUITE_ONLY);
    assert.ok(whole.length > 0);
    assert.deepEqual(
      fast,
      files.filter((f) => !whole.includes(f)),
      'npm test runs every file but the whole-suite ones',
    );
    assert.deepEqual(
      runtime,
      files.filter((f) => !whole.includes(f) || f in RUNTIME_SENSITIVE),
      '--runtime-sensitive adds the runtime-sensitive files to the fast tier',
    );
  });
});

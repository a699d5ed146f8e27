// The `dot` the PlantUML JVM runs: the real Graphviz, under its CPU and memory bounds.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { boundedDot } from './dot.ts';

function complete(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) out.push(`n${i} -> n${j}`);
  return `digraph { ${out.join('; ')} }`;
}

describe('bounded dot', { skip: toolSkip('dot', ['-V']) || toolSkip('prlimit'), timeout: 120_000 }, () => {
  it('runs Graphviz under its bounds, and a runaway layout ends at its CPU bound', async () => {
    const dot = boundedDot(tempDir(), { cpuSeconds: 2, dataBytes: 512 * 1024 * 1024 });
    assert.ok(dot, 'a bounded dot was written');
    const v = spawnSync(dot, ['-V'], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stderr, /graphviz version/);
    const ok = spawnSync(dot, ['-Tsvg'], { input: 'digraph { bounded -> dot }', encoding: 'utf8' });
    assert.match(ok.stdout, /<svg[\s\S]*bounded/);

    const runaway = spawn(dot, ['-Tsvg'], { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise<[number | null, string | null]>((r) =>
      runaway.once('exit', (c, s) => r([c, s])),
    );
    runaway.stdin.end(complete(150));
    // The script sets one bound after another and then execs dot: read the limits once the process
    // is the real dot (reading when the soft CPU bound appeared saw the hard one still unlimited).
    let limits = '';
    for (let t = 0; t < 10_000 && !limits; t += 50) {
      if (readFileSync(`/proc/${runaway.pid}/comm`, 'utf8').trim() === 'dot')
        limits = readFileSync(`/proc/${runaway.pid}/limits`, 'utf8');
      else await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(limits, /^Max cpu time\s+2\s+3/m);
    assert.match(limits, new RegExp(`^Max data size\\s+${512 * 1024 * 1024}\\s`, 'm'));
    assert.match(limits, /^Max core file size\s+0\s+0/m);
    const [code, signal] = await exited;
    assert.equal(code, null);
    assert.ok(signal === 'SIGXCPU' || signal === 'SIGKILL', `ended by its CPU bound (${signal})`);
  });

  it('runs dot through prlimit, under the same bounds, where the shell cannot set them itself', async () => {
    const dot = boundedDot(tempDir(), { cpuSeconds: 3, dataBytes: 256 * 1024 * 1024 });
    assert.ok(dot);
    // The script sourced by a shell whose ulimit fails (a function shadows the builtin).
    const sh = ['-c', 'ulimit() { return 1; }; . "$0"', dot, '-Tsvg'];
    const ok = spawnSync('sh', sh, { input: 'digraph { through -> prlimit }', encoding: 'utf8' });
    assert.match(ok.stdout, /<svg[\s\S]*prlimit/, ok.stderr);
    // dot waits for its input: its limits are read once it runs.
    const waiting = spawn('sh', sh, { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise((r) => waiting.once('exit', r));
    let limits = '';
    for (let t = 0; t < 10_000 && !limits; t += 50) {
      if (readFileSync(`/proc/${waiting.pid}/comm`, 'utf8').trim() === 'dot')
        limits = readFileSync(`/proc/${waiting.pid}/limits`, 'utf8');
      else await new Promise((r) => setTimeout(r, 50));
    }
    waiting.stdin.end('digraph { a -> b }');
    await exited;
    assert.match(limits, /^Max cpu time\s+3\s+4/m);
    assert.match(limits, new RegExp(`^Max data size\\s+${256 * 1024 * 1024}\\s`, 'm'));
    assert.match(limits, /^Max core file size\s+0\s+0/m);
  });

  it("keeps one script per bounds in a shared directory: a later server with other bounds does not change the first one's", () => {
    const dir = tempDir();
    const long = boundedDot(dir, { cpuSeconds: 14, dataBytes: 1024 ** 3 });
    const short = boundedDot(dir, { cpuSeconds: 5, dataBytes: 256 * 1024 ** 2 });
    const again = boundedDot(dir, { cpuSeconds: 14, dataBytes: 1024 ** 3 });
    assert.ok(long && short);
    assert.notEqual(long, short);
    assert.equal(again, long);
    const script = readFileSync(long, 'utf8');
    // The shell's own ulimit, then dot itself; prlimit only where the shell cannot set them.
    assert.match(
      script,
      /^ulimit -S -t 14 .*ulimit -H -t 15 .*ulimit -d 1048576 .* && exec '[^']*dot' "\$@"$/m,
    );
    assert.match(script, /'--cpu=14:15'/);
    assert.match(readFileSync(short, 'utf8'), /'--cpu=5:6'/);
  });
});

// The kernel's bounds on a child, read back from the child's own /proc/self/limits and status.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { missing } from '../../../test/helpers/tools.ts';
import { boundedArgv, boundTools, cpuMillis, memoryOf } from './bounds.ts';

/** Running (a zombie nobody reaped yet counts as gone). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

const skip = boundTools().prlimit && boundTools().setpriv ? false : missing('util-linux prlimit/setpriv');

describe('process bounds', { skip, timeout: 60_000 }, () => {
  it('runs a command under its memory, CPU and file size limits, nice, and without core files', () => {
    const argv = boundedArgv(
      ['sh', '-c', 'cat /proc/self/limits; grep -E "^NSpid|^Pid" /proc/self/status; nice'],
      {
        dataBytes: 300 * 1024 * 1024,
        cpuSeconds: 4.2,
        fileBytes: 1024 * 1024,
        nice: 7,
        dieWithParent: true,
      },
    );
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const limit = (name: string) => new RegExp(`^${name}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(r.stdout)?.slice(1);
    assert.deepEqual(limit('Max data size'), [String(300 * 1024 * 1024), String(300 * 1024 * 1024)]);
    assert.deepEqual(limit('Max cpu time'), ['5', '6']);
    assert.deepEqual(limit('Max file size'), [String(1024 * 1024), String(1024 * 1024)]);
    assert.deepEqual(limit('Max core file size'), ['0', '0']);
    assert.match(r.stdout, /^7$/m, 'nice 7');
  });

  it('makes an allocation past the data bound fail in the child', () => {
    // 1 GiB: Node 26 commits about 510 MiB of code space for its isolate before any script runs.
    const argv = boundedArgv(
      [
        process.execPath,
        '-e',
        'try { Buffer.alloc(1536 * 1024 * 1024, 1); console.log("allocated") } catch (e) { console.log("refused", e.message) }',
      ],
      { dataBytes: 1024 * 1024 * 1024 },
    );
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    assert.match(r.stdout, /^refused/m, `${r.stdout}${r.stderr}`);
  });

  it('kills the child when the process that started it dies', async () => {
    // A parent that starts a bounded sleep, prints its pid, and is then killed.
    const script = `const { spawn } = require('node:child_process'); const c = spawn(${JSON.stringify(
      boundedArgv(['sleep', '600'], { dieWithParent: true })[0],
    )}, ${JSON.stringify(boundedArgv(['sleep', '600'], { dieWithParent: true }).slice(1))}, { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    const pid = Number(await new Promise<string>((r) => parent.stdout.once('data', (d) => r(String(d)))));
    // The death signal is armed by setpriv just before it execs the command: killing the parent
    // earlier (a loaded machine) would test that window, not the bound. Wait for `sleep` itself.
    const comm = () => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
      } catch {
        return '';
      }
    };
    for (let t = 0; t < 10_000 && comm() !== 'sleep'; t += 50) await new Promise((r) => setTimeout(r, 50));
    assert.equal(comm(), 'sleep', 'the child has become the command');
    assert.ok(running(pid) && memoryOf(pid), 'the child runs');
    assert.ok((cpuMillis(pid) ?? -1) >= 0);
    parent.kill('SIGKILL');
    for (let t = 0; t < 10_000 && running(pid); t += 100) await new Promise((r) => setTimeout(r, 100));
    assert.equal(running(pid), false, 'the child is gone');
  });
});

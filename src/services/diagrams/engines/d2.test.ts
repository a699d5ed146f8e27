// D2 renders in a child process of its render thread (d2-process.js): the process ends with the
// thread, whether the pool closes or the thread is replaced, and a server that rendered D2 exits at
// once (with D2's WebAssembly inside the process, exit waited a minute or more for V8's background
// optimisation of the 22 MB module).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TS_EXEC_ARGV } from '../../../../scripts/ts-loader.js';
import { tempDir } from '../../../../test/helpers/server.ts';
import { packageVersion } from '../kroki/packages.ts';
import { ThreadPool } from './thread-pool.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Pids of the D2 processes whose parent is `ppid`. */
function d2Children(ppid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('d2-process.js'))
        out.push(Number(e));
    } catch {}
  }
  return out;
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  for (let t = 0; t < ms && !ok(); t += 100) await sleep(100);
  assert.ok(ok(), what);
}

const job = (source: string) => ({ engine: 'd2', source, format: 'svg', options: {} });

describe('D2 engine process', {
  timeout: 240_000,
  skip: !packageVersion('@terrastruct/d2') && 'not installed',
}, () => {
  it('renders in a child of its thread, answers syntax errors, and the child ends when the pool closes', async () => {
    const pool = new ThreadPool({ size: 1, timeoutMs: 60_000, heapMb: 256, idleMs: 0 });
    try {
      const r = await pool.run(job('client -> devutil: GET'));
      assert.equal(r.ok, true);
      assert.match(r.ok ? Buffer.from(r.body).toString() : '', /<svg[\s\S]*devutil/);
      assert.equal(d2Children(process.pid).length, 1, 'one D2 process, a child of this process');
      const bad = await pool.run(job('a -> b -> {'));
      assert.equal(bad.ok, false);
      assert.equal(!bad.ok && bad.kind, 'syntax');
    } finally {
      await pool.close();
    }
    await until('no D2 process left after close', () => d2Children(process.pid).length === 0);
  });

  it('lets a process that rendered D2 exit as soon as it is done', async () => {
    const dir = tempDir();
    const script = join(dir, 'render-and-exit.mts');
    const poolUrl = new URL('./thread-pool.ts', import.meta.url).href;
    writeFileSync(
      script,
      `import { ThreadPool } from ${JSON.stringify(poolUrl)};
const pool = new ThreadPool({ size: 1, timeoutMs: 60_000, heapMb: 256, idleMs: 0 });
const r = await pool.run({ engine: 'd2', source: 'a -> b', format: 'svg', options: {} });
await pool.close();
console.log(r.ok ? 'rendered' : 'failed');
process.exit(0);
`,
    );
    const child = spawn(process.execPath, [...TS_EXEC_ARGV, script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    let exited = false;
    const code = new Promise<number | null>((r) =>
      child.once('exit', (c) => {
        exited = true;
        r(c);
      }),
    );
    // Rendering may take long on a busy machine; exiting after it may not: V8 optimises D2's module
    // for a minute or more after it loads, and a process holding it waits for that before it ends.
    await until('rendered', () => out.includes('rendered') || exited, 180_000);
    assert.match(out, /rendered/, err.slice(-2000));
    await until('the process exited within 20 s of being done', () => exited, 20_000);
    assert.equal(await code, 0);
    if (!exited) child.kill('SIGKILL');
  });
});

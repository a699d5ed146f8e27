// D2 renders in a render process (render-process.js), which ends when the pool closes, and a server
// that rendered D2 exits at once (with D2's WebAssembly inside the server process, exit waited a
// minute or more for V8's background optimisation of the 22 MB module).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TS_EXEC_ARGV } from '../../../../scripts/ts-loader.js';
import { tempDir } from '../../../../test/helpers/server.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { packageVersion } from '../../../infra/config/extras.ts';
import { ProcessPool, type ProcessPoolOptions } from './process-pool.ts';

/** Pids of the render processes whose parent is `ppid`. */
function renderChildren(ppid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('render-process.js'))
        out.push(Number(e));
    } catch {}
  }
  return out;
}

const job = (source: string) => ({ engine: 'd2', source, format: 'svg', options: {} });
const OPTIONS: ProcessPoolOptions = {
  size: 1,
  spares: 0,
  timeoutMs: 60_000,
  heapMb: 256,
  memoryBytes: 1024 ** 3,
  maxOutputBytes: 32 * 1024 ** 2,
  idleMs: 0,
  nice: 10,
};

describe('D2 engine process', {
  timeout: 240_000,
  skip: !packageVersion('@terrastruct/d2') && 'not installed',
}, () => {
  it('renders in a render process, answers syntax errors, and the process ends when the pool closes', async () => {
    const pool = new ProcessPool(OPTIONS);
    try {
      const r = await pool.run(job('client -> devutil: GET'));
      assert.equal(r.ok, true);
      assert.match(r.ok ? Buffer.from(r.body).toString() : '', /<svg[\s\S]*devutil/);
      assert.equal(renderChildren(process.pid).length, 1, 'one render process, a child of this process');
      const bad = await pool.run(job('a -> b -> {'));
      assert.equal(bad.ok, false);
      assert.equal(!bad.ok && bad.kind, 'syntax');
      // ELK is loaded on the first diagram that names it: by the layout option, or in the source.
      const elk = await pool.run({ ...job('elk -> option'), options: { layout: 'elk' } });
      assert.equal(elk.ok, true, elk.ok ? '' : elk.message);
      const config = await pool.run(
        job('vars: { d2-config: { layout-engine: elk } }\nin -> source: configured'),
      );
      assert.equal(config.ok, true, config.ok ? '' : config.message);
      assert.match(config.ok ? Buffer.from(config.body).toString() : '', /configured/);
    } finally {
      await pool.close();
    }
    await waitFor(() => renderChildren(process.pid).length === 0, 'no render process left after close');
  });

  it('lets a process that rendered D2 exit as soon as it is done', async () => {
    const dir = tempDir();
    // .mjs: plain JavaScript, which every runtime runs with or without a TypeScript loader.
    const script = join(dir, 'render-and-exit.mjs');
    const poolUrl = new URL('./process-pool.ts', import.meta.url).href;
    writeFileSync(
      script,
      `import { ProcessPool } from ${JSON.stringify(poolUrl)};
const pool = new ProcessPool(${JSON.stringify(OPTIONS)});
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
    await waitFor(() => out.includes('rendered') || exited, 'rendered', 180_000);
    assert.match(out, /rendered/, err.slice(-2000));
    await waitFor(() => exited, 'the process exited within 20 s of being done', 20_000);
    assert.equal(await code, 0);
    if (!exited) child.kill('SIGKILL');
  });
});

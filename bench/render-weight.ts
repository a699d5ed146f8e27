// Weight of one render process (issue 35): what each JavaScript/WebAssembly engine adds to it. One
// process of the render pool (process-pool.ts, with the server's flags, environment and bounds)
// draws one language's sample after another, and is weighed after each first render by its
// anonymous and private memory (smaps_rollup: anonymous is the heaps, WebAssembly memory and
// compiled code, not the node binary's pages, which other Node processes share). Then the CPU of
// BENCH_RENDERS more renders of each sample (from /proc/<pid>/stat, so the pool's own IPC is left
// out), and the process is left idle until it has collected its heap, and weighed again.
// NODE_COMPILE_CACHE (a fresh directory: a process that compiles everything) is passed on.
//   BENCH_RENDERS (30), BENCH_TYPES (every language drawn in a render process, space-separated)
import { readFileSync } from 'node:fs';
import { cpuMillis } from '../src/infra/process/bounds.ts';
import { ProcessPool } from '../src/services/diagrams/engines/process-pool.ts';
import type { RenderJob } from '../src/services/diagrams/engines/render-job.ts';
import { LANGUAGES } from '../src/services/diagrams/kroki/languages.ts';
import { header } from './lib.ts';

const RENDERS = Number(process.env['BENCH_RENDERS'] ?? 30);
const MiB = 2 ** 20;

/** Anonymous and private memory of a process (MiB). */
function weigh(pid: number): { anon: number; priv: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    anon: kb('Anonymous') / 1024,
    priv: (kb('Private_Clean') + kb('Private_Dirty')) / 1024,
  };
}

async function main(): Promise<void> {
  header('Weight of one render process, engine by engine');
  const wanted = process.env['BENCH_TYPES']?.split(/\s+/).filter(Boolean);
  const seen = new Set<string>();
  const jobs: { type: string; job: RenderJob }[] = [];
  for (const l of LANGUAGES) {
    // BPMN is a thread language drawn in the browser pool.
    if (
      l.kind !== 'thread' ||
      l.engine === 'bpmn' ||
      (wanted ? !wanted.includes(l.type) : seen.has(`${l.engine} ${JSON.stringify(l.preset)}`))
    )
      continue;
    seen.add(`${l.engine} ${JSON.stringify(l.preset)}`);
    jobs.push({
      type: l.type,
      job: { engine: l.engine, source: l.sample, format: 'svg', options: { ...l.preset } },
    });
  }
  let collected: Record<string, unknown> | undefined;
  const pool = new ProcessPool({
    size: 1,
    spares: 0,
    timeoutMs: 120_000,
    heapMb: 512,
    memoryBytes: 1024 ** 3,
    maxOutputBytes: 32 * MiB,
    idleMs: 0,
    nice: 0,
    collectIdleMs: 3000,
    onEvent: (e, d) => {
      if (e === 'collect') collected = d;
    },
  });
  const f = (n: number) => n.toFixed(1).padStart(6);
  try {
    // A process with no engine: its first job is the lightest (the pool starts one on demand).
    await pool.run({ engine: 'pikchr', source: 'box', format: 'svg', options: {} });
    const pid = pool.pids()[0]!;
    const start = weigh(pid);
    console.log(
      `${'process, pikchr'.padEnd(24)} anonymous ${f(start.anon)} MiB, private ${f(start.priv)} MiB`,
    );
    // First every engine's first render (what it adds), then the timed renders (their garbage
    // would otherwise count in the next engine's figure).
    let svg = '';
    for (const { type, job } of jobs) {
      const before = weigh(pid);
      const t0 = performance.now();
      const first = await pool.run(job);
      const ms = performance.now() - t0;
      if (!first.ok) throw new Error(`${type}: ${first.message}`);
      if (type === 'graphviz') svg = String(first.body);
      const w = weigh(pid);
      console.log(
        `${type.padEnd(24)} anonymous ${f(w.anon)} MiB (+${f(w.anon - before.anon)}), private ${f(w.priv)}; first render ${f(ms)} ms`,
      );
    }
    if (svg) {
      const job = { engine: 'raster', source: svg, format: 'png', options: { limit: '4096' } };
      const before = weigh(pid);
      await pool.run(job);
      const w = weigh(pid);
      console.log(`${'raster (PNG)'.padEnd(24)} anonymous ${f(w.anon)} MiB (+${f(w.anon - before.anon)})`);
    }
    console.log(
      `CPU of the process so far (start, every engine loaded, one render each): ${cpuMillis(pid)} ms`,
    );
    const cpu: string[] = [];
    for (const { type, job } of jobs) {
      const c0 = cpuMillis(pid) ?? 0;
      for (let i = 0; i < RENDERS; i++) await pool.run(job);
      cpu.push(`${type} ${(((cpuMillis(pid) ?? 0) - c0) / RENDERS).toFixed(1)}`);
    }
    console.log(`CPU per render (ms, ${RENDERS} renders each): ${cpu.join(', ')}`);
    const after = weigh(pid);
    console.log(
      `after ${RENDERS} more renders of each: anonymous ${f(after.anon)} MiB, private ${f(after.priv)}`,
    );
    const until = Date.now() + 60_000;
    while (!collected && Date.now() < until) await new Promise((r) => setTimeout(r, 250));
    await new Promise((r) => setTimeout(r, 500));
    const idle = weigh(pid);
    console.log(
      `idle, after its collection (${collected ? `heap ${f(Number(collected['before']) / MiB)} -> ${f(Number(collected['after']) / MiB)} MiB, ${String(collected['cpuMs'])} ms CPU` : 'none within 60 s'}): anonymous ${f(idle.anon)} MiB, private ${f(idle.priv)}`,
    );
  } finally {
    await pool.close();
  }
}

await main();

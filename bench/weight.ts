// Weight of the server's process tree (issue 35): RSS and PSS (shared pages counted once) of
// `devutil serve` and everything it started, after start-up (JVM prestarted), after one diagram in
// every language of the Kroki API (and a Mermaid type and BPMN drawn in Chromium), and after the
// idle settings below ran out. Targets: every engine loaded <= 1.5x the tree after start-up; the
// idle tree <= 200 MiB with the JVM. Rows without the browser are printed too: Chromium's share
// depends on the system's build, and the idle settings close it.
// The worker and its class archive are built in a directory kept between runs (as a server's data
// directory keeps them): a first run's archive training JVM would count in its start-up tree.
//   BENCH_IDLE_SEC (20): the idle settings the server gets (render processes, browser pool)
//   BENCH_COLLECT_SEC (45): how long the idle trees are left alone before they are weighed again,
//     for the server's own idle collections (the node process's heap after 10-14 s, the JVM's heap
//     after 30 s and its native heap trimmed every 10 s)
//   BENCH_JVM_IDLE_SEC (unset: the JVM is kept, as by default, and weighs in the idle tree)
//   BENCH_JVM_INITIAL_HEAP (unset: the default; 0 = Java's own)
//   MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_: passed on to the server (deploy/devutil.service sets them)
//   BENCH_CHROMIUM (unset: the one the server finds, a headless shell first): the browser pool's executable
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { LANGUAGES } from '../src/services/diagrams/kroki/languages.ts';
import { startDevutilProcess } from '../test/helpers/process.ts';
import { header, type Row, report, rssOf, treeSum } from './lib.ts';

const IDLE_SEC = Number(process.env['BENCH_IDLE_SEC'] ?? 20);
const COLLECT_SEC = Number(process.env['BENCH_COLLECT_SEC'] ?? 45);
const MiB = 2 ** 20;
const enc = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');

/** RSS, PSS and the private part of it (bytes; NaN once the process is gone). */
function pssOf(pid: number): { rss: number; pss: number; priv: number } {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {}
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    rss: kb('Rss') * 1024,
    pss: kb('Pss') * 1024,
    priv: (kb('Private_Clean') + kb('Private_Dirty')) * 1024,
  };
}

/** What a process of the tree is, from its command line. */
function role(pid: number, root: number): string {
  if (pid === root) return 'main node';
  let cmd = '';
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {}
  if (cmd.includes('render-process')) return 'render processes';
  if (/java/.test(cmd.split('\0')[0] ?? '')) return 'JVM';
  if (/chrom/i.test(cmd)) return 'chromium';
  return `other (${(cmd.split('\0')[0] ?? '').split('/').pop()})`;
}

interface Weight {
  rss: number;
  pss: number;
  /**
   * PSS by role with the process count, and the private part: a process's share of the pages it
   * shares (the node or java binary, the class archive) moves with how many other processes map
   * them, on this machine too, so PSS can grow or shrink while the process itself does not. RSS
   * counts every page a process maps once per process: the idle cap is checked on both.
   */
  by: Map<string, { rss: number; pss: number; priv: number; n: number }>;
  /** Private MiB of each render process, largest first (which one holds the engines, which is the spare). */
  each: number[];
}

function weigh(root: number): Weight {
  const by = new Map<string, { rss: number; pss: number; priv: number; n: number }>();
  const each: number[] = [];
  const rss = treeSum(root, rssOf);
  const pss = treeSum(root, (p) => {
    const v = pssOf(p);
    if (Number.isFinite(v.pss)) {
      const r = role(p, root);
      const e = by.get(r) ?? { rss: 0, pss: 0, priv: 0, n: 0 };
      by.set(r, { rss: e.rss + v.rss, pss: e.pss + v.pss, priv: e.priv + v.priv, n: e.n + 1 });
      if (r === 'render processes') each.push(v.priv / MiB);
    }
    return v.pss;
  });
  return { rss, pss, by, each: each.sort((a, b) => b - a) };
}

const withoutChromium = (w: Weight) => w.pss - (w.by.get('chromium')?.pss ?? 0);

function print(label: string, w: Weight): void {
  const parts = [...w.by]
    .map(
      ([r, v]) =>
        `${r} x${v.n} ${(v.pss / MiB).toFixed(0)} (private ${(v.priv / MiB).toFixed(0)}, RSS ${(v.rss / MiB).toFixed(0)})`,
    )
    .join(', ');
  const each =
    w.each.length > 1 ? `; render processes' private: ${w.each.map((m) => m.toFixed(0)).join(', ')}` : '';
  console.log(
    `# ${label}: RSS ${(w.rss / MiB).toFixed(0)} MiB, PSS ${(w.pss / MiB).toFixed(0)} MiB (${parts})${each}`,
  );
}

/** Waits (bounded) for the tree's PSS to stop moving: the JVM and the GCs settle after a load. */
async function settled(root: number, maxMs = 30_000): Promise<Weight> {
  let last = weigh(root);
  const until = Date.now() + maxMs;
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = weigh(root);
    if (Math.abs(now.pss - last.pss) < 2 * MiB || Date.now() > until) return now;
    last = now;
  }
}

async function main(): Promise<void> {
  header('Weight of the process tree: after start-up, every engine loaded, idle again');
  const idle = String(IDLE_SEC);
  const buildDir = join(tmpdir(), 'devutil-bench-weight-build');
  mkdirSync(buildDir, { recursive: true });
  const env: Record<string, string> = {
    DEVUTIL_DIAGRAMS_BUILD_DIR: buildDir,
    DEVUTIL_LOG_LEVEL: 'warn',
    DEVUTIL_DIAGRAMS_PRESTART: 'true',
    DEVUTIL_DIAGRAMS_RATE_LIMIT: 'off',
    DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100',
    DEVUTIL_DIAGRAMS_RENDER_THREAD_IDLE_SEC: idle,
    DEVUTIL_DIAGRAMS_MERMAID_BROWSER_IDLE_SEC: idle,
    ...Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('MALLOC_') && !!e[1]),
    ),
    ...(process.env['BENCH_JVM_IDLE_SEC']
      ? { DEVUTIL_DIAGRAMS_WORKER_IDLE_SEC: process.env['BENCH_JVM_IDLE_SEC'] }
      : {}),
    ...(process.env['BENCH_CHROMIUM']
      ? { DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM: process.env['BENCH_CHROMIUM'] }
      : {}),
    ...(process.env['BENCH_JVM_INITIAL_HEAP']
      ? { DEVUTIL_DIAGRAMS_WORKER_INITIAL_HEAP: process.env['BENCH_JVM_INITIAL_HEAP'] }
      : {}),
  };
  console.log(
    `# idle settings: ${Object.entries(env)
      .filter(
        ([k]) =>
          k.includes('IDLE') || k.includes('INITIAL') || k.startsWith('MALLOC_') || k.endsWith('CHROMIUM'),
      )
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  const dev = await startDevutilProcess(env);
  const root = dev.proc.pid ?? 0;
  try {
    // Start-up includes the prestarted JVM (no diagram asked: that would load PlantUML's classes):
    // one java process in the tree (a first run's archive training has ended), then a settled tree.
    const until = Date.now() + 180_000;
    while (weigh(root).by.get('JVM')?.n !== 1 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 200));
    const start = await settled(root);
    print('after start-up', start);
    await new Promise((r) => setTimeout(r, COLLECT_SEC * 1000));
    const startIdle = await settled(root);
    print(`after start-up and ${COLLECT_SEC} s more`, startIdle);

    const failed: string[] = [];
    let loaded: Weight | undefined;
    // The browser's types first: a cold Chromium is the slowest start, and every engine should
    // still be loaded (inside the idle time) when the tree is weighed.
    const samples = [
      { type: 'mermaid', fmt: 'svg', src: 'pie title Pets\n  "Dogs" : 386\n  "Cats" : 85' },
      { type: 'mermaid', fmt: 'svg', src: 'gantt\n  title A\n  section S\n  T1 :a1, 2024-01-01, 30d' },
      ...LANGUAGES.map((l) => ({ type: l.type, fmt: l.formats[0] ?? 'svg', src: l.sample })).sort(
        (a, b) => Number(b.type === 'bpmn') - Number(a.type === 'bpmn'),
      ),
    ];
    for (const s of samples) {
      const r = await fetch(`${dev.url}/plantuml/${s.type}/${s.fmt}/${enc(s.src)}`, {
        headers: { connection: 'close' },
      });
      await r.arrayBuffer();
      if (r.status !== 200) failed.push(`${s.type} ${r.status}`);
      // The heaviest tree of the pass: on a busy machine the pass outlasts the idle settings, and
      // the processes of the first languages have exited by its end.
      const w = weigh(root);
      if (!loaded || w.pss > loaded.pss) loaded = w;
    }
    console.log(
      `# ${samples.length - failed.length} diagrams rendered${failed.length ? `; not rendered here: ${failed.join(', ')}` : ''}`,
    );
    if (!loaded) throw new Error('no diagram rendered');
    print('every engine loaded (the heaviest tree of the pass)', loaded);

    const lastRequest = Date.now();
    const idleUntil = Date.now() + IDLE_SEC * 1000 + 60_000;
    await new Promise((r) => setTimeout(r, IDLE_SEC * 1000));
    let after = weigh(root);
    while (
      Date.now() < idleUntil &&
      [...after.by.keys()].some(
        (k) =>
          k === 'render processes' ||
          k === 'chromium' ||
          (k === 'JVM' && !!env['DEVUTIL_DIAGRAMS_WORKER_IDLE_SEC']),
      )
    ) {
      await new Promise((r) => setTimeout(r, 500));
      after = weigh(root);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, lastRequest + COLLECT_SEC * 1000 - Date.now())));
    after = await settled(root);
    print(`idle again (${COLLECT_SEC} s or more after the last request)`, after);

    const rows: Row[] = [
      { metric: 'RSS, every engine loaded', devutil: loaded.rss / MiB, anchor: start.rss / MiB },
      { metric: 'PSS, every engine loaded', devutil: loaded.pss / MiB, anchor: start.pss / MiB },
      {
        metric: 'PSS, loaded, no Chromium',
        devutil: withoutChromium(loaded) / MiB,
        anchor: start.pss / MiB,
      },
      { metric: 'PSS, idle again', devutil: after.pss / MiB, anchor: start.pss / MiB },
    ].map((r) => ({ ...r, unit: 'MiB', higherIsBetter: false, target: 1.5 }));
    report('Weight', 'after start', rows);
    const cap = (n: number) =>
      `${(n / MiB).toFixed(0)} MiB ${n <= 200 * MiB ? '<= 200 MET' : '> 200 NOT MET'}`;
    console.log(`idle tree after start-up: RSS ${cap(start.rss)}; PSS ${cap(start.pss)}`);
    console.log(
      `idle tree after start-up and ${COLLECT_SEC} s: RSS ${cap(startIdle.rss)}; PSS ${cap(startIdle.pss)}`,
    );
    console.log(`idle tree after the idle settings: RSS ${cap(after.rss)}; PSS ${cap(after.pss)}`);
  } finally {
    await dev.stop();
  }
}

await main();

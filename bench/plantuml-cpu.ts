// Where the CPU of one uncached PlantUML diagram goes (issue 35), process by process: devutil's Node
// process, its worker JVM and the JVM's reaped children (`dot` through its bounding script), against
// PicoWeb's JVM (`java -jar <same jar> -picoweb`) and its `dot` children; inside each JVM, its
// collector and VM threads, its C1 and C2 compiler threads (per-thread CPU from /proc), and the
// collector's pauses and young collections (jstat). Every request is a new diagram of the test
// corpus (svg and png). All servers are up at once; each round runs them in turn, in alternating
// order, and the table holds medians, with the load average.
//   BENCH_ROUNDS (4), BENCH_SECONDS (10), BENCH_WARM_SECONDS (15), BENCH_CONCURRENCY ("4,16": c=4 first,
//   so a fresh JVM's first renders do not time out into quarantine)
//   BENCH_PLANTUML_ROOTS="old=/path/to/other/checkout,new=.@DEVUTIL_X=1": devutil servers to run side
//   by side, each from its own checkout (with node_modules), with its own DEVUTIL_* settings after @
//   (default: this checkout alone). BENCH_PICOWEB=0 leaves PicoWeb out.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { header, median, wrk, wrkThreads } from './lib.ts';
import {
  events,
  exitOf,
  load,
  ROOT,
  removeScratch,
  spawnDevutil,
  spawnPicoweb,
  status,
  tree,
  uniquePaths,
  walker,
} from './plantuml-lib.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 4);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const WARM = Number(process.env['BENCH_WARM_SECONDS'] ?? 15);
const CONCURRENCY = (process.env['BENCH_CONCURRENCY'] ?? '4,16').split(',').map(Number);
const ROOTS = (process.env['BENCH_PLANTUML_ROOTS'] ?? `devutil=${ROOT}`).split(',').map((spec) => {
  const eq = spec.indexOf('=');
  const [dir, ...settings] = spec.slice(eq + 1).split('@');
  const env = Object.fromEntries(
    settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]),
  );
  return { name: spec.slice(0, eq), dir: resolve(dir!), env };
});

interface Server {
  name: string;
  url: string;
  /** The process wrk's requests reach: devutil's Node process, or PicoWeb's JVM. */
  pid: number;
  proc: ChildProcess;
  dataDir?: string;
  /** The server's JVMs now (devutil's worker pool can replace one). */
  jvms(): number[];
}

interface Times {
  comm: string;
  /** CPU seconds of the process (or thread) itself. */
  own: number;
  /** CPU seconds of its reaped children. */
  children: number;
}

function times(path: string): Times {
  const f = readFileSync(path, 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return {
    comm: f.slice(f.indexOf('(') + 1, f.lastIndexOf(')')),
    own: (Number(x[11]) + Number(x[12])) / 100,
    children: (Number(x[13]) + Number(x[14])) / 100,
  };
}

/** A JVM thread's group by its name: the collector and VM threads, the C1 or C2 compiler, the rest. */
const groupOf = (comm: string) =>
  /^C1 Compi/.test(comm)
    ? 'c1'
    : /^C2 Compi/.test(comm)
      ? 'c2'
      : /^(VM Thread|GC Thread|G1 |VM Periodic)/.test(comm)
        ? 'gc'
        : 'other';

interface Snapshot {
  jvms: string;
  node: number;
  jvm: number;
  dot: number;
  threads: Record<string, number>;
  /** Collector pause seconds and young collections (jstat). */
  gcPause: number;
  young: number;
}

function jstat(pid: number): { pause: number; young: number } {
  try {
    const [h, v] = execFileSync('jstat', ['-gc', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    const at = (k: string) => Number(v![h!.indexOf(k)]);
    return { pause: at('GCT'), young: at('YGC') };
  } catch {
    return { pause: NaN, young: NaN };
  }
}

function snapshot(s: Server): Snapshot {
  const jvms = s.jvms();
  const out: Snapshot = { jvms: jvms.join(','), node: 0, jvm: 0, dot: 0, threads: {}, gcPause: 0, young: 0 };
  if (s.name !== 'picoweb') out.node = times(`/proc/${s.pid}/stat`).own;
  for (const j of jvms) {
    try {
      const t = times(`/proc/${j}/stat`);
      out.jvm += t.own;
      out.dot += t.children;
      for (const tid of readdirSync(`/proc/${j}/task`)) {
        try {
          const th = times(`/proc/${j}/task/${tid}/stat`);
          const g = groupOf(th.comm);
          out.threads[g] = (out.threads[g] ?? 0) + th.own;
        } catch {} // a thread that ended meanwhile
      }
      const gc = jstat(j);
      out.gcPause += gc.pause;
      out.young += gc.young;
    } catch {} // a JVM that exited meanwhile
  }
  return out;
}

const isJava = (pid: number) => {
  try {
    return times(`/proc/${pid}/stat`).comm === 'java';
  } catch {
    return false;
  }
};

async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 180_000;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`${what}: not up after 180 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startDevutil(name: string, dir: string, own: Record<string, string>): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'devutil-bench-plantuml-cpu-'));
  const { url, pid, proc } = await spawnDevutil(
    dataDir,
    {
      // One client (wrk) drives all the load: its fair share of the render threads is all of them.
      DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100',
      DEVUTIL_MAX_CONNECTIONS_PER_CLIENT: '0',
      ...own,
    },
    dir,
  );
  await until(async () => (await status(`${url}/healthz`)) === 200, name);
  return { name, url, pid, proc, dataDir, jvms: () => tree(pid).filter((p) => p !== pid && isJava(p)) };
}

async function startPicoweb(): Promise<Server> {
  const { url, pid, proc } = await spawnPicoweb();
  const probe = uniquePaths(`picoweb-up-${process.pid}`, 1)[0]!;
  await until(async () => (await status(url + probe)) === 200, 'picoweb');
  return { name: 'picoweb', url, pid, proc, jvms: () => [pid] };
}

header('PlantUML: CPU per uncached diagram, process by process, against PicoWeb (same jar)');
const servers: Server[] = [];
if (process.env['BENCH_PICOWEB'] !== '0') servers.push(await startPicoweb());
for (const r of ROOTS) servers.push(await startDevutil(r.name, r.dir, r.env));

type Row = Record<string, number>;
const COLUMNS: [string, string][] = [
  ['rps', 'req/s'],
  ['p99', 'p99 ms'],
  ['node', 'Node'],
  ['jvm', 'JVM'],
  ['dot', 'dot'],
  ['total', 'total'],
  ['gc', 'JVM gc+vm'],
  ['c1', 'C1'],
  ['c2', 'C2'],
  ['pause', 'gc pauses'],
  ['young', 'young/100'],
];
const rows = new Map<string, Row[]>();
const startLoad = load();
let seq = 0;
for (const c of CONCURRENCY) {
  const threads = wrkThreads(c);
  for (const s of servers)
    wrk(s.url, {
      connections: c,
      durationSec: WARM,
      script: walker(uniquePaths(`cpu-warm${c}-${seq++}-${process.pid}`, 20_000), threads),
      serverCloses: s.name === 'picoweb',
    });
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 ? [...servers].reverse() : servers) {
      const a = snapshot(s);
      const n = 20_000;
      const w = wrk(s.url, {
        connections: c,
        durationSec: SECONDS,
        script: walker(uniquePaths(`cpu-run${c}-${seq++}-${process.pid}`, n), threads),
        serverCloses: s.name === 'picoweb',
      });
      const b = snapshot(s);
      if (w.requests > n) throw new Error('more requests than distinct diagrams: some were cache hits');
      if (a.jvms !== b.jvms)
        console.log(`  ${s.name}: its JVMs changed (${a.jvms} -> ${b.jvms}): round left out`);
      const ms = (x: number) => (x * 1000) / w.requests;
      const th = (g: string) => ms((b.threads[g] ?? 0) - (a.threads[g] ?? 0));
      const row: Row = {
        rps: w.rps,
        p99: w.p99ms,
        node: ms(b.node - a.node),
        jvm: ms(b.jvm - a.jvm),
        dot: ms(b.dot - a.dot),
        total: ms(b.node - a.node + b.jvm - a.jvm + b.dot - a.dot),
        gc: th('gc'),
        c1: th('c1'),
        c2: th('c2'),
        pause: ms(b.gcPause - a.gcPause),
        young: ((b.young - a.young) * 100) / w.requests,
      };
      console.log(
        `  c=${c} ${s.name} round ${round}: ${COLUMNS.map(([k, label]) => `${label} ${row[k]!.toFixed(2)}`).join(', ')}${w.errors ? `, ${w.errors} errors` : ''} (load ${load()})`,
      );
      if (a.jvms === b.jvms) rows.set(`${c} ${s.name}`, [...(rows.get(`${c} ${s.name}`) ?? []), row]);
    }
  }
}
// A render past its deadline sends the bench's one client to the quarantine JVM: not the main pool's figures.
for (const s of servers.filter((x) => x.name !== 'picoweb')) {
  const odd = Object.entries(events(s.url)).filter(([k]) => /quarantine|timeout|crash|retire/.test(k));
  if (odd.length) console.log(`WARNING ${s.name}: ${odd.map(([k, v]) => `${k} ${v}`).join(', ')}`);
}
console.log(
  `\nms of CPU per diagram (req/s and p99 as wrk saw them), medians of ${ROUNDS} alternating rounds of ${SECONDS} s (load ${startLoad} -> ${load()}):`,
);
console.log(`  ${'c'.padEnd(3)} ${'server'.padEnd(10)} ${COLUMNS.map(([, l]) => l.padStart(9)).join(' ')}`);
for (const [key, rs] of rows) {
  const [c, name] = key.split(' ');
  console.log(
    `  ${c!.padEnd(3)} ${name!.padEnd(10)} ${COLUMNS.map(([k]) =>
      median(rs.map((r) => r[k]!))
        .toFixed(2)
        .padStart(9),
    ).join(' ')}`,
  );
}
for (const s of servers) {
  s.proc.kill('SIGTERM');
  await exitOf(s.proc);
  if (s.dataDir) rmSync(s.dataDir, { recursive: true, force: true });
}
removeScratch();

// Diagram rendering (issues 7, 15) against the engine's own PicoWeb server (`java -jar <same jar>
// -picoweb:PORT:127.0.0.1`), same corpus, same URLs (/plantuml/{svg,png}/<encoded> works on both):
// cold start to the first diagram (target <= 1.0x), uncached req/s, p99 and CPU per diagram at
// concurrency 1, 4, 16 (every request a new diagram; >= 1.0x, p99 no worse), peak RSS (devutil =
// node + every worker JVM). Cached diagrams are compared with nginx serving the same bytes as
// static files (>= 0.6x): PicoWeb has no cache, so comparing with its render is met by construction.
// The machine is shared: every figure is the median of alternating rounds, printed with the load.
//   BENCH_ROUNDS (3), BENCH_COLD_ROUNDS (5), BENCH_SECONDS (8)
//   BENCH_PLANTUML_SHAPES="1x4,2x2": also run these pool shapes (JVMs x render threads) side by side
//   BENCH_COLD_ONLY=1: the cold start alone (no render or cache rounds)
//   BENCH_BASELINE=DIR: also cold-start the checkout in DIR (another branch's worktree), in the same
//     alternating rounds, to compare a change with what it changes
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeDiagram } from '../src/services/diagrams/plantuml/encoding.ts';
import {
  header,
  invalid,
  median,
  type Proc,
  report,
  rssOf,
  saturation,
  startDevutil,
  startNginx,
  type WrkResult,
  wrk,
  wrkThreads,
} from './lib.ts';
import {
  corpus,
  events,
  FORMATS,
  load,
  removeScratch,
  spawnDevutil,
  spawnPicoweb,
  status,
  tree,
  treeCpu,
  uniquePaths,
  walker,
} from './plantuml-lib.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 8);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const COLD_ROUNDS = Number(process.env['BENCH_COLD_ROUNDS'] ?? 5);
const COLD_ONLY = process.env['BENCH_COLD_ONLY'] === '1';
const BASELINE = process.env['BENCH_BASELINE'] ?? '';

/** Samples the RSS of a process tree every 100 ms; returns a stop() giving the peak in MiB. */
function rssPeak(pid: number): () => number {
  let peak = 0;
  const t = setInterval(() => {
    let sum = 0;
    for (const p of tree(pid)) {
      try {
        const r = rssOf(p);
        if (Number.isFinite(r)) sum += r; // a process exiting mid-sample has no VmRSS
      } catch {}
    }
    peak = Math.max(peak, sum);
  }, 100);
  return () => {
    clearInterval(t);
    return peak / 1024 / 1024;
  };
}

async function waitOk(url: string, ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while ((await status(url)) !== 200) {
    if (Date.now() > until) throw new Error(`${url} gave no diagram in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Cold {
  /** Process start to the first diagram. */
  ms: number;
  /** Process start to the first accepted connection. */
  listenMs: number;
  /** CPU seconds of the whole process tree by then. */
  cpu: number;
}

let coldSeq = 0;

/** Resolves true once a TCP connection to `port` is accepted (polling every 10 ms), false if `proc` ends. */
async function accepting(port: number, proc: ChildProcess): Promise<boolean> {
  while (proc.exitCode === null && proc.signalCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

/** Starts a server, asks for a diagram nobody asked for before every 10 ms until it answers 200. */
async function coldStart(
  start: () => Promise<Proc & { proc: ChildProcess; logTail?(): string }>,
): Promise<Cold> {
  const path = `/plantuml/svg/${encodeDiagram(`Carol -> Dave : cold start ${process.pid} ${coldSeq++}`)}`;
  const t0 = performance.now();
  const s = await start();
  let listenMs = NaN;
  void accepting(s.port, s.proc).then((ok) => {
    if (ok) listenMs = performance.now() - t0;
  });
  try {
    for (;;) {
      if (s.proc.exitCode !== null)
        throw new Error(`server exited with ${s.proc.exitCode}: ${s.logTail?.() ?? ''}`);
      if ((await status(s.url + path)) === 200) break;
      if (performance.now() - t0 > 120_000) throw new Error('no diagram in 120 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    return { ms: performance.now() - t0, listenMs, cpu: treeCpu(s.pid) };
  } finally {
    await s.close();
  }
}

header(`PlantUML, ${corpus.length}-diagram corpus, svg+png, against PicoWeb (same jar)`);
const dataDir = mkdtempSync(join(tmpdir(), 'devutil-bench-plantuml-'));
// One client (wrk) drives all the load: its fair share of the render threads is all of them.
const devEnv: Record<string, string> = { DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100' };
// Tuning knobs pass through: DEVUTIL_DIAGRAMS_WORKERS=3 DEVUTIL_DIAGRAMS_WORKER_HEAP=1GiB npm run bench -- plantuml
for (const [k, v] of Object.entries(process.env)) if (k.startsWith('DEVUTIL_DIAGRAMS_') && v) devEnv[k] = v;

// ---- Cold start. The first start on a fresh data directory compiles the worker and makes the
// class-data archive in the background (once per jar and Java): shown, not compared.
const fresh = await coldStart(() => spawnDevutil(dataDir, devEnv));
console.log(`devutil first start on a fresh data dir (worker compile): ${fresh.ms.toFixed(0)} ms`);
// Worker directories (one per jar and Java), and those that hold a class-data archive.
const workers = () => readdirSync(join(dataDir, 'plantuml')).filter((d) => d.startsWith('worker-'));
const archived = () =>
  workers().filter((d) => readdirSync(join(dataDir, 'plantuml', d)).some((f) => f.endsWith('.jsa'))).length;
// A baseline's worker (its jar path differs) is compiled and archived in the same data directory.
for (const root of BASELINE ? [undefined, BASELINE] : [undefined]) {
  if (root) await coldStart(() => spawnDevutil(dataDir, devEnv, root));
  if (devEnv['DEVUTIL_DIAGRAMS_CLASS_ARCHIVE'] === 'false') break;
  // The archive is trained by the server that compiled the worker; give it a server to finish in.
  const archiveMade = Date.now() + 300_000;
  const trainer = await spawnDevutil(dataDir, devEnv, root);
  while (archived() < workers().length && Date.now() < archiveMade)
    await new Promise((r) => setTimeout(r, 500));
  await trainer.close();
  const made = archived() === workers().length;
  console.log(
    `${made ? 'class-data archive made' : 'WARNING: no class-data archive after 5 minutes'}${root ? ` (${root})` : ''}`,
  );
}
const coldVariants: [string, () => Promise<Proc & { proc: ChildProcess }>][] = [
  ['picoweb', spawnPicoweb],
  ['devutil', () => spawnDevutil(dataDir, devEnv)],
  [
    'devutil, no archive',
    () => spawnDevutil(dataDir, { ...devEnv, DEVUTIL_DIAGRAMS_CLASS_ARCHIVE: 'false' }),
  ],
  ['devutil, no prestart', () => spawnDevutil(dataDir, { ...devEnv, DEVUTIL_DIAGRAMS_PRESTART: 'false' })],
];
if (BASELINE) coldVariants.splice(2, 0, ['devutil, baseline', () => spawnDevutil(dataDir, devEnv, BASELINE)]);
const shapes = (process.env['BENCH_PLANTUML_SHAPES'] ?? '').split(',').filter(Boolean);
const shapeEnv = (shape: string) => {
  const [w, t] = shape.split('x');
  return { DEVUTIL_DIAGRAMS_WORKERS: w!, DEVUTIL_DIAGRAMS_WORKER_THREADS: t! };
};
for (const s of shapes)
  coldVariants.push([`devutil ${s}`, () => spawnDevutil(dataDir, { ...devEnv, ...shapeEnv(s) })]);
const cold = new Map<string, Cold[]>(coldVariants.map(([n]) => [n, []]));
const coldLoad = load();
for (let r = 0; r < COLD_ROUNDS; r++) {
  // Alternate the order, so a load change during the round does not favour one side.
  const order = r % 2 ? [...coldVariants].reverse() : coldVariants;
  for (const [name, start] of order) cold.get(name)!.push(await coldStart(start));
}
console.log(`\ncold start, ${COLD_ROUNDS} alternating rounds (load ${coldLoad} -> ${load()}), medians:`);
for (const [name, runs] of cold) {
  const listen = median(runs.map((c) => c.listenMs));
  console.log(
    `  ${name.padEnd(22)} first diagram ${median(runs.map((c) => c.ms)).toFixed(0)} ms` +
      `${Number.isNaN(listen) ? '' : `, listening ${listen.toFixed(0)} ms`}` +
      `, CPU ${median(runs.map((c) => c.cpu)).toFixed(2)} s  [${runs.map((c) => c.ms.toFixed(0)).join(' ')}]`,
  );
}
const coldRows: Parameters<typeof report>[2] = [
  {
    metric: 'cold start to first diagram',
    devutil: median(cold.get('devutil')!.map((c) => c.ms)),
    anchor: median(cold.get('picoweb')!.map((c) => c.ms)),
    unit: 'ms',
    higherIsBetter: false,
    target: 1.0,
  },
  {
    metric: 'cold start CPU (process tree)',
    devutil: median(cold.get('devutil')!.map((c) => c.cpu)),
    anchor: median(cold.get('picoweb')!.map((c) => c.cpu)),
    unit: 's',
    higherIsBetter: false,
  },
];
if (COLD_ONLY) {
  rmSync(dataDir, { recursive: true, force: true });
  report(`PlantUML cold start (load ${coldLoad})`, 'picoweb', coldRows);
  process.exit(0);
}

// ---- Uncached renders: devutil (default pool, and any BENCH_PLANTUML_SHAPES) and PicoWeb, all up at
// once; each round runs every server in turn (alternating order), each request a new diagram.
interface Server {
  name: string;
  proc: Proc;
}
const pico = await spawnPicoweb();
const servers: Server[] = [{ name: 'picoweb', proc: pico }];
const dev = await startDevutil({ ...devEnv, DEVUTIL_DATA_DIR: dataDir });
servers.push({ name: 'devutil', proc: dev });
for (const s of shapes) {
  const env = { ...devEnv, DEVUTIL_DATA_DIR: dataDir, ...shapeEnv(s) };
  servers.push({ name: `devutil ${s}`, proc: await startDevutil(env) });
}
const rss = new Map(servers.map((s) => [s.name, rssPeak(s.proc.pid)]));

// Sanity: every corpus diagram renders (200) on every server before anything is measured.
for (const p of uniquePaths('sanity', corpus.length * FORMATS.length)) {
  for (const s of servers) {
    // A connection PicoWeb reset under load (status 0) is asked again; an answer is not.
    let code = await status(s.proc.url + p);
    for (let i = 0; code === 0 && i < 3; i++) code = await status(s.proc.url + p);
    if (code !== 200) throw new Error(`${s.name} ${p.slice(0, 40)}… answered ${code}`);
  }
}

interface Run {
  wrk: WrkResult;
  /** CPU milliseconds of the server's process tree per answered request. */
  cpuMs: number;
}
const runs = new Map<string, Run[]>();
const n = 20_000;
const uncachedLoad = load();
let seq = 0;
for (const c of [1, 4, 16]) {
  const t = wrkThreads(c);
  for (const s of servers) {
    wrk(s.proc.url, {
      connections: c,
      durationSec: 2,
      script: walker(uniquePaths(`warm${c}-${seq++}`, 400), t),
      serverCloses: s.name === 'picoweb',
    });
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of r % 2 ? [...servers].reverse() : servers) {
      const cpu0 = treeCpu(s.proc.pid);
      const w = wrk(s.proc.url, {
        connections: c,
        durationSec: SECONDS,
        script: walker(uniquePaths(`run${c}-${seq++}`, n), t),
        watch: { [s.name === 'picoweb' ? 'anchor' : 'devutil']: s.proc.pid },
        // PicoWeb closes every connection after its answer: wrk's read errors there are not failures.
        serverCloses: s.name === 'picoweb',
      });
      if (w.requests > n) throw new Error('more requests than distinct diagrams: some were cache hits');
      const key = `${s.name} c=${c}`;
      runs.set(key, [
        ...(runs.get(key) ?? []),
        { wrk: w, cpuMs: ((treeCpu(s.proc.pid) - cpu0) * 1000) / w.requests },
      ]);
    }
  }
}
console.log(
  `\nuncached, ${ROUNDS} alternating rounds of ${SECONDS} s (load ${uncachedLoad} -> ${load()}), medians:`,
);
// A render past its deadline (a cold JIT with 16 renders in flight on a loaded machine) makes the
// one client of the bench a suspect: from then on its renders go to the quarantine JVM (2 threads,
// lowest priority), and the figures below are not the main pool's.
for (const s of servers.filter((x) => x.name !== 'picoweb')) {
  const e = events(s.proc.url);
  const odd = Object.entries(e).filter(([k]) => k.startsWith('quarantine') || /timeout|crash|retire/.test(k));
  if (odd.length)
    console.log(
      `  WARNING ${s.name}: ${odd.map(([k, v]) => `${k} ${v}`).join(', ')}: the bench client may have been rendered in quarantine from then on`,
    );
}
const stat = (name: string, c: number) => {
  const rs = runs.get(`${name} c=${c}`) ?? [];
  return {
    rps: median(rs.map((x) => x.wrk.rps)),
    p99: median(rs.map((x) => x.wrk.p99ms)),
    cpuMs: median(rs.map((x) => x.cpuMs)),
    all: rs.map((x) => x.wrk.rps.toFixed(1)).join(' '),
    invalid: invalid({ [name]: rs.map((x) => x.wrk) }),
    last: rs.at(-1)?.wrk,
  };
};
const rows: Parameters<typeof report>[2] = [];
for (const c of [1, 4, 16]) {
  for (const s of servers) {
    const x = stat(s.name, c);
    console.log(
      `  c=${String(c).padEnd(2)} ${s.name.padEnd(14)} ${x.rps.toFixed(1).padStart(7)} req/s  p99 ${x.p99.toFixed(0).padStart(5)} ms` +
        `  CPU ${x.cpuMs.toFixed(0).padStart(4)} ms/diagram  [${x.all}]${x.invalid ? `  NOT VALID: ${x.invalid}` : ''}`,
    );
  }
  const d = stat('devutil', c);
  const p = stat('picoweb', c);
  if (d.last && p.last) console.log(`  last round: ${saturation(d.last, p.last, 'picoweb')}`);
  const bad = [d.invalid, p.invalid].filter(Boolean).join(', ') || undefined;
  rows.push(
    {
      metric: `uncached c=${c}`,
      devutil: d.rps,
      anchor: p.rps,
      unit: 'req/s',
      higherIsBetter: true,
      target: 1.0,
      invalid: bad,
    },
    {
      metric: `uncached p99 c=${c}`,
      devutil: d.p99,
      anchor: p.p99,
      unit: 'ms',
      higherIsBetter: false,
      target: 1,
      invalid: bad,
    },
    {
      metric: `uncached CPU c=${c}`,
      devutil: d.cpuMs,
      anchor: p.cpuMs,
      unit: 'ms/diagram',
      higherIsBetter: false,
    },
  );
}

// Cached: the same diagram bytes from devutil's cache and from nginx's disk (page cache).
const cachedPaths = uniquePaths('cached', corpus.length * FORMATS.length);
const www = join(dataDir, 'www');
mkdirSync(www);
chmodSync(dataDir, 0o755); // nginx workers run as nobody
const staticPaths: string[] = [];
const cachedRows: Parameters<typeof report>[2] = [];
for (const [i, p] of cachedPaths.entries()) {
  await waitOk(dev.url + p, 30_000);
  const body = Buffer.from(await (await fetch(dev.url + p)).arrayBuffer());
  const name = `${i}.${p.split('/')[2]}`; // encoded diagrams can be longer than a file name may be
  writeFileSync(join(www, name), body);
  staticPaths.push(`/${name}`);
}
const ngx = await startNginx(
  `location / { root ${www}; types { image/svg+xml svg; image/png png; } }`,
  '',
  staticPaths[0],
);
for (const c of [1, 4, 16]) {
  const t = wrkThreads(c);
  const sec = Math.ceil(SECONDS / 2);
  const d = wrk(dev.url, {
    connections: c,
    durationSec: sec,
    script: walker(cachedPaths, t),
    watch: { devutil: dev.pid },
  });
  const p = wrk(ngx.url, {
    connections: c,
    durationSec: sec,
    script: walker(staticPaths, t),
    watch: { anchor: ngx.pid },
  });
  console.log(`cached c=${c}: ${saturation(d, p, 'nginx static')}`);
  cachedRows.push({
    metric: `cached c=${c}`,
    devutil: d.rps,
    anchor: p.rps,
    unit: 'req/s',
    higherIsBetter: true,
    target: 0.6,
    invalid: invalid({ devutil: d, nginx: p }),
  });
}
await ngx.close();
rows.push({
  metric: 'peak RSS (node + pool vs JVM)',
  devutil: rss.get('devutil')!(),
  anchor: rss.get('picoweb')!(),
  unit: 'MiB',
  higherIsBetter: false,
});
for (const s of shapes) console.log(`peak RSS devutil ${s}: ${rss.get(`devutil ${s}`)!().toFixed(0)} MiB`);
for (const s of servers) await s.proc.close();
rmSync(dataDir, { recursive: true, force: true });
removeScratch();

report(`PlantUML cold start (load ${coldLoad})`, 'picoweb', coldRows);
report(`PlantUML, ${corpus.length}-diagram corpus, svg+png (load ${load()})`, 'picoweb', rows);
report('PlantUML cache hits, the same bytes as static files', 'nginx static', cachedRows);

// The PlantUML worker JVM's flags, each alone against devutil's own command line (issue 15): start
// to the first render, and CPU per render once warm (one worker, 4 render threads, 4 renders in
// flight; BENCH_JVM_THREADS=16 for the default pool's 16), driven through the worker protocol so no
// HTTP is measured. Heap and initial heap are the server's defaults. CPU seconds are the figure
// that survives a loaded machine; wall times are medians of alternating rounds, with the load.
//   BENCH_ROUNDS (3), BENCH_RENDERS (200 measured after 3 x as many to warm up), BENCH_JVM_FLAGS
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { ClassArchive } from '../src/services/diagrams/plantuml/cds.ts';
import {
  buildWorker,
  defaultJar,
  detectJava,
  NATIVE_TRIM_MS,
} from '../src/services/diagrams/plantuml/java.ts';
import { JavaWorker, javaArgs, type WorkerOptions } from '../src/services/diagrams/plantuml/worker.ts';
import { tempDir } from '../test/helpers/server.ts';
import { header, median } from './lib.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const RENDERS = Number(process.env['BENCH_RENDERS'] ?? 200);
const THREADS = Number(process.env['BENCH_JVM_THREADS'] ?? 4);
const CORPUS_DIR = new URL('../test/fixtures/plantuml/corpus/', import.meta.url).pathname;
const corpus = readdirSync(CORPUS_DIR)
  .filter((f) => f.endsWith('.puml'))
  .map((f) => readFileSync(join(CORPUS_DIR, f), 'utf8'));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

header('PlantUML worker JVM flags, each alone (worker protocol, no HTTP)');
const info = await detectJava('java');
if (!info.ok) throw new Error(info.reason);
const jar = defaultJar();
const classDir = await buildWorker(info, jar, tempDir('devutil-bench-jvm-'));
const defaults = loadConfig({ env: {} }).config.diagrams;
const base: WorkerOptions = {
  java: 'java',
  jar,
  classDir,
  heapBytes: defaults.workerHeap,
  ...(defaults.workerInitialHeap ? { initialHeapBytes: defaults.workerInitialHeap } : {}),
  profile: 'INTERNET',
  urlAllowlist: [],
  limitSize: 4096,
  threads: THREADS,
  ...(info.nativeTrim ? { trimNativeHeapMs: NATIVE_TRIM_MS } : {}),
};
const silent = { info() {}, warn() {} } as unknown as ConstructorParameters<typeof ClassArchive>[0]['log'];
const archive = new ClassArchive({
  dir: classDir,
  key: ['bench'],
  java: 'java',
  trainArgs: (out) => javaArgs({ ...base, trainArchive: out }),
  log: silent,
});
archive.train();
while (!archive.current()) await new Promise((r) => setTimeout(r, 200));
const shared = archive.current()!;

const variants: Record<string, { archive: boolean; flags: string[] }> = {
  'devutil default': { archive: true, flags: [] },
  'no archive (-Xshare default)': { archive: false, flags: [] },
  'C1 only (TieredStopAtLevel=1)': { archive: true, flags: ['-XX:TieredStopAtLevel=1'] },
  'G1 (the JVM default GC)': { archive: true, flags: ['-XX:-UseSerialGC', '-XX:+UseG1GC'] },
  ParallelGC: { archive: true, flags: ['-XX:-UseSerialGC', '-XX:+UseParallelGC'] },
  '-XX:-UsePerfData': { archive: true, flags: ['-XX:-UsePerfData'] },
  '-XX:CICompilerCount=2': { archive: true, flags: ['-XX:CICompilerCount=2'] },
  ...(info.nativeTrim
    ? { 'no native trim': { archive: true, flags: ['-XX:TrimNativeHeapInterval=0'] } }
    : {}),
};
// BENCH_JVM_FLAGS='{"name": ["-XX:..."]}' measures these instead (with the default beside them).
const chosen = process.env['BENCH_JVM_FLAGS'];
if (chosen) {
  for (const k of Object.keys(variants)) if (k !== 'devutil default') delete variants[k];
  for (const [name, flags] of Object.entries(JSON.parse(chosen) as Record<string, string[]>))
    variants[name] = { archive: true, flags };
}

function cpuOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(x[11]) + Number(x[12])) / 100;
}

interface Result {
  firstMs: number;
  firstCpu: number;
  /** CPU ms per render over RENDERS renders after the first 3 x RENDERS (warm). */
  warmCpuMs: number;
  warmRps: number;
}

let seq = 0;
async function measure(v: { archive: boolean; flags: string[] }): Promise<Result> {
  const t0 = performance.now();
  const w = new JavaWorker({ ...base, ...(v.archive ? { sharedArchive: shared } : {}), jvmFlags: v.flags });
  try {
    await w.ready;
    const src = (i: number) => corpus[i % corpus.length]!.replace(/\n/, `\n' jvm ${seq++}\n`);
    const first = await w.request({ op: 'render', format: 'svg', source: `Carol -> Dave : ${seq++}` });
    if (first.status !== 'ok') throw new Error(`render: ${first.status}`);
    const firstMs = performance.now() - t0;
    const firstCpu = cpuOf(w.pid!);
    // THREADS in flight, as the pool keeps them; svg and png alternately.
    const batch = async (n: number) => {
      let next = 0;
      const lane = async () => {
        while (next < n) {
          const i = next++;
          const r = await w.request({ op: 'render', format: i % 2 ? 'png' : 'svg', source: src(i) });
          if (r.status !== 'ok') throw new Error(`render: ${r.status} ${r.exception ?? ''}`);
        }
      };
      await Promise.all(Array.from({ length: THREADS }, lane));
    };
    await batch(RENDERS * 3);
    const c0 = cpuOf(w.pid!);
    const t1 = performance.now();
    await batch(RENDERS);
    const warmCpuMs = ((cpuOf(w.pid!) - c0) * 1000) / RENDERS;
    return { firstMs, firstCpu, warmCpuMs, warmRps: RENDERS / ((performance.now() - t1) / 1000) };
  } finally {
    w.kill();
    await w.waitExit();
  }
}

const results = new Map<string, Result[]>(Object.keys(variants).map((k) => [k, []]));
const startLoad = load();
for (let r = 0; r < ROUNDS; r++) {
  const names = Object.keys(variants);
  for (const name of r % 2 ? names.reverse() : names) results.get(name)!.push(await measure(variants[name]!));
}
console.log(
  `\n${ROUNDS} alternating rounds (load ${startLoad} -> ${load()}), medians; worker = 1 JVM x ${THREADS} threads`,
);
console.log(
  `${'variant'.padEnd(32)} ${'first render'.padStart(13)} ${'its CPU'.padStart(8)} ${'warm CPU/render'.padStart(16)} ${'warm renders/s'.padStart(15)}`,
);
for (const [name, rs] of results) {
  console.log(
    `${name.padEnd(32)} ${`${median(rs.map((x) => x.firstMs)).toFixed(0)} ms`.padStart(13)} ${`${median(rs.map((x) => x.firstCpu)).toFixed(2)} s`.padStart(8)} ${`${median(rs.map((x) => x.warmCpuMs)).toFixed(1)} ms`.padStart(16)} ${median(
      rs.map((x) => x.warmRps),
    )
      .toFixed(1)
      .padStart(15)}`,
  );
}

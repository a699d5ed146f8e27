// Diagram rendering (issue 7) against the engine's own PicoWeb server (`java -jar <same jar>
// -picoweb:PORT:127.0.0.1`), same corpus, same URLs (/plantuml/{svg,png}/<encoded> works on both):
// uncached req/s and p99 at concurrency 1, 4, 16 (every request a new diagram; issue 15 targets
// >= 1.0x, p99 no worse), peak RSS (devutil = node + every worker JVM), cold start to the first
// diagram (<= 1.0x). Cached diagrams are compared with nginx serving the same bytes as static
// files (the cache-hit target, >= 0.6x): PicoWeb has no cache, so comparing our cache with its
// render would be met by construction.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { encodeDiagram } from '../src/services/plantuml/encoding.ts';
import { defaultJar } from '../src/services/plantuml/java.ts';
import { freePort } from '../test/helpers/ports.ts';
import {
  invalid,
  type Proc,
  report,
  rssOf,
  saturation,
  startDevutil,
  startNginx,
  tempFile,
  wrk,
  wrkThreads,
} from './lib.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 8);
const CORPUS_DIR = new URL('../test/fixtures/plantuml/corpus/', import.meta.url).pathname;
const corpus = readdirSync(CORPUS_DIR)
  .filter((f) => f.endsWith('.puml'))
  .map((f) => readFileSync(join(CORPUS_DIR, f), 'utf8'));
const jar = defaultJar();
const FORMATS = ['svg', 'png'];

/** `n` distinct diagram URLs: the corpus round-robin, each with its own comment line. */
function uniquePaths(tag: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const src = corpus[i % corpus.length]!.replace(/\n/, `\n' bench ${tag} ${i}\n`);
    return `/plantuml/${FORMATS[i % FORMATS.length]}/${encodeDiagram(src)}`;
  });
}

const scratch: string[] = [];

/**
 * A wrk script walking `paths` in order. Each of the `threads` wrk threads has its own Lua state
 * and counter, so thread k takes paths k, k+threads, ...: no two requests share a URL (else the
 * second one of an "uncached" pair would be a cache hit).
 */
function walker(paths: string[], threads: number): string {
  const file = tempFile('paths.txt', `${paths.join('\n')}\n`);
  scratch.push(dirname(file));
  return scratchFile(
    'walk.lua',
    `local paths = {}
local next_id = 0
setup = function(thread) thread:set("id", next_id); next_id = next_id + 1 end
local i = 0
init = function(args)
  for line in io.lines("${file}") do paths[#paths + 1] = line end
  i = id
end
request = function()
  local p = paths[i % #paths + 1]
  i = i + ${threads}
  return wrk.format("GET", p)
end
`,
  );
}

function scratchFile(name: string, content: string): string {
  const f = tempFile(name, content);
  scratch.push(dirname(f));
  return f;
}

function childPids(pid: number): number[] {
  const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map(Number)
    .filter((n) => n > 0);
}

/** Samples the RSS of a process tree every 100 ms; returns a stop() giving the peak in MiB. */
function rssPeak(pid: number): () => number {
  let peak = 0;
  const tree = (p: number): number[] => [p, ...childPids(p).flatMap(tree)];
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
  for (;;) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch {}
    if (Date.now() > until) throw new Error(`${url} gave no diagram in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function startPicoweb(): Promise<Proc & { proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn('java', ['-Djava.awt.headless=true', '-jar', jar, `-picoweb:${port}:127.0.0.1`], {
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    pid: proc.pid ?? 0,
    proc,
    close: () =>
      new Promise((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
      }),
  };
}

const HELLO = `/plantuml/svg/${encodeDiagram('Bob -> Alice : hello')}`;

// Cold start: process start to the first rendered diagram.
const t0 = Date.now();
const pico = await startPicoweb();
await waitOk(pico.url + HELLO);
const picoCold = Date.now() - t0;
// One data dir for both devutil starts: the first compiles the worker entry point, the second reuses it.
const dataDir = mkdtempSync(join(tmpdir(), 'devutil-bench-plantuml-'));
// One client (wrk) drives all the load: its fair share of the render threads is all of them.
const devEnv: Record<string, string> = { DEVUTIL_DATA_DIR: dataDir, DEVUTIL_PLANTUML_CLIENT_SHARE: '100' };
// Tuning knobs pass through: DEVUTIL_PLANTUML_WORKERS=3 DEVUTIL_PLANTUML_WORKER_HEAP=1GiB npm run bench -- plantuml
for (const [k, v] of Object.entries(process.env)) if (k.startsWith('DEVUTIL_PLANTUML_') && v) devEnv[k] = v;
const t1 = Date.now();
const dev = await startDevutil(devEnv);
await waitOk(dev.url + HELLO);
const devColdFresh = Date.now() - t1;
console.log(`devutil cold start incl. the one-time worker compile (fresh data dir): ${devColdFresh} ms`);
const devRss = rssPeak(dev.pid);
const picoRss = rssPeak(pico.pid);

// Sanity: every corpus diagram renders (200) on both servers before anything is measured.
for (const p of uniquePaths('sanity', corpus.length * FORMATS.length)) {
  for (const base of [dev.url, pico.url]) {
    const r = await fetch(base + p);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${base}${p.slice(0, 40)}… answered ${r.status}`);
  }
}

const rows: Parameters<typeof report>[2] = [];
for (const c of [1, 4, 16]) {
  const n = 20_000;
  const t = wrkThreads(c);
  const warm = walker(uniquePaths(`warm${c}`, 400), t);
  wrk(dev.url, { connections: c, durationSec: 2, script: warm });
  wrk(pico.url, { connections: c, durationSec: 2, script: warm, serverCloses: true });
  const d = wrk(dev.url, {
    connections: c,
    durationSec: SECONDS,
    script: walker(uniquePaths(`dev${c}`, n), t),
    watch: { devutil: dev.pid },
  });
  const p = wrk(pico.url, {
    connections: c,
    durationSec: SECONDS,
    script: walker(uniquePaths(`pico${c}`, n), t),
    watch: { anchor: pico.pid },
    serverCloses: true,
  });
  const bad =
    d.requests > n || p.requests > n
      ? 'more requests than distinct diagrams: some were cache hits'
      : invalid({ devutil: d, picoweb: p });
  // wrk counts PicoWeb's closing of every connection as a read error; those are not failures.
  console.log(`c=${c}: devutil ${d.requests} req, picoweb ${p.requests} req`);
  console.log(saturation(d, p, 'picoweb'));
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
      devutil: d.p99ms,
      anchor: p.p99ms,
      unit: 'ms',
      higherIsBetter: false,
      target: 1,
      invalid: bad,
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
  devutil: devRss(),
  anchor: picoRss(),
  unit: 'MiB',
  higherIsBetter: false,
});
await dev.close();
await pico.close();

// Warm data dir: the worker class is compiled once per data dir and engine version.
// A diagram not in the disk cache, so the first answer really comes from a JVM.
const COLD = `/plantuml/svg/${encodeDiagram('Carol -> Dave : cold start')}`;
const t2 = Date.now();
const dev2 = await startDevutil(devEnv);
await waitOk(dev2.url + COLD);
const devCold = Date.now() - t2;
await dev2.close();
rows.push({
  metric: 'cold start to first diagram',
  devutil: devCold,
  anchor: picoCold,
  unit: 'ms',
  higherIsBetter: false,
  target: 1.0,
});
rmSync(dataDir, { recursive: true, force: true });
for (const d of scratch) rmSync(d, { recursive: true, force: true });

report(`PlantUML, ${corpus.length}-diagram corpus, svg+png`, 'picoweb', rows);
report('PlantUML cache hits, the same bytes as static files', 'nginx static', cachedRows);

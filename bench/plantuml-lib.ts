// What the PlantUML benches share: the corpus, distinct (uncached) diagram URLs and the wrk script
// that walks them, process-tree CPU, and `devutil serve` started as a separate process.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { encodeDiagram } from '../src/services/diagrams/plantuml/encoding.ts';
import { defaultJar } from '../src/services/diagrams/plantuml/java.ts';
import { freePort } from '../test/helpers/ports.ts';
import { type Proc, tempFile } from './lib.ts';

export const ROOT = new URL('..', import.meta.url).pathname;
export const CORPUS_DIR = new URL('../test/fixtures/plantuml/corpus/', import.meta.url).pathname;
export const corpus = readdirSync(CORPUS_DIR)
  .filter((f) => f.endsWith('.puml'))
  .map((f) => readFileSync(join(CORPUS_DIR, f), 'utf8'));
export const jar = defaultJar();
export const FORMATS = ['svg', 'png'];
export const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** `n` distinct diagram URLs: the corpus round-robin, each with its own comment line. */
export function uniquePaths(tag: string, n: number): string[] {
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
export function walker(paths: string[], threads: number): string {
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

export function scratchFile(name: string, content: string): string {
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

export const tree = (p: number): number[] => [p, ...childPids(p).flatMap(tree)];

/**
 * CPU seconds of a process tree, per process (/proc/PID/stat, so threads that already ended count:
 * PicoWeb runs each connection on its own thread), including reaped children (`dot`).
 */
export function treeCpu(pid: number): number {
  let sum = 0;
  for (const p of tree(pid)) {
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8');
      const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
      sum += (Number(x[11]) + Number(x[12]) + Number(x[13]) + Number(x[14])) / 100;
    } catch {} // exited meanwhile
  }
  return sum;
}

export async function status(url: string): Promise<number> {
  try {
    const r = await fetch(url);
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

export function exitOf(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
}

/**
 * `devutil serve` as the Docker image runs it, on the data directory `dataDir`, from this checkout
 * or the one in `root`.
 */
export async function spawnDevutil(
  dataDir: string,
  env: Record<string, string>,
  root = ROOT,
): Promise<Proc & { proc: ChildProcess; logTail(): string }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [join(root, 'bin/devutil.js'), 'serve'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_DATA_DIR: dataDir,
      DEVUTIL_LOG_LEVEL: 'warn',
      DEVUTIL_RELAY_ENABLED: 'false',
      ...env,
    },
  });
  // The log's last lines (warn and above), for the error when the server exits.
  let tail = '';
  proc.stdout?.on('data', (c: Buffer) => {
    tail = (tail + c.toString()).slice(-4000);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: proc.pid ?? 0,
    proc,
    logTail: () => tail,
    close: async () => {
      proc.kill('SIGTERM');
      await exitOf(proc);
    },
  };
}

/** plantuml.jar's own server (PicoWeb) on a free loopback port: the anchor. */
export async function spawnPicoweb(): Promise<Proc & { proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn('java', ['-Djava.awt.headless=true', '-jar', jar, `-picoweb:${port}:127.0.0.1`], {
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: proc.pid ?? 0,
    proc,
    close: async () => {
      proc.kill('SIGKILL');
      await exitOf(proc);
    },
  };
}

/** Removes the scripts and path lists walker() wrote. */
export function removeScratch(): void {
  for (const d of scratch.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** devutil_plantuml_worker_events_total by "pool event" (DEVUTIL_METRICS_ENABLED is on by default). */
export function events(url: string): Record<string, number> {
  // curl, not fetch: a kept-alive connection would have been closed by the server during wrk's run.
  const text = execFileSync('curl', ['-fsS', `${url}/metrics`], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^devutil_plantuml_worker_events_total\{([^}]*)\} (\d+)/gm)) {
    const l = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out[`${l['pool']} ${l['event']}`] = Number(m[2]);
  }
  return out;
}

// Benchmark harness: start devutil (a real child process) and an anchor side by side on loopback,
// drive both with the same wrk load, print each figure and the ratio. Not run in CI.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNginx as startNginxProcess, waitHttp } from '../test/helpers/nginx.ts';
import { freePort } from '../test/helpers/ports.ts';
import { startDevutilProcess } from '../test/helpers/process.ts';
import { tempDir } from '../test/helpers/server.ts';

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  bytesPerSec: number;
  requests: number;
  /** Non-2xx/3xx answers plus socket errors: a run with any is not a valid figure. */
  errors: number;
  non2xx: number;
  socketErrors: number;
  durationSec: number;
  /** wrk's own CPU use in cores, and its thread count: a saturated load generator caps both sides. */
  wrkCores: number;
  threads: number;
  /** CPU use of each watched process tree during the run (WrkOptions.watch). */
  cpu: Record<string, CpuUse>;
}

export interface WrkOptions {
  connections?: number;
  durationSec?: number;
  /** Default: one per core (at most one per connection), so wrk is not the bottleneck. */
  threads?: number;
  /** Path of a wrk Lua script (e.g. for POST bodies). */
  script?: string;
  /**
   * wrk's per-request timeout (its default is 2 s): a slower answer counts as a socket error and is
   * left out of the latency figures, so a tail measurement needs a longer one.
   */
  timeoutSec?: number;
  headers?: Record<string, string>;
  /** Process trees to measure during the run, by name (e.g. { devutil: pid }). */
  watch?: Record<string, number>;
  /**
   * The server closes every connection after its answer (PicoWeb): wrk counts each close as a
   * read error, so read errors are not failures there (non-2xx, connect errors and timeouts are).
   */
  serverCloses?: boolean;
}

export function requireCommand(cmd: string, pkg = cmd): void {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`${cmd} not found: apt-get install -y ${pkg}`);
}

function toMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}

function toBytes(v: string, unit: string): number {
  const m: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
  return Number(v) * (m[unit] ?? 1);
}

/** wrk's default thread count here: one per core, never more than the connections. */
export function wrkThreads(connections: number): number {
  return Math.max(1, Math.min(availableParallelism(), connections));
}

/** Runs wrk with --latency and parses its summary; measures wrk's and the watched trees' CPU. */
export function wrk(url: string, o: WrkOptions = {}): WrkResult {
  requireCommand('wrk');
  const connections = o.connections ?? 32;
  const threads = o.threads ?? wrkThreads(connections);
  const durationSec = o.durationSec ?? 10;
  const args = ['-t', String(threads), '-c', String(connections), '-d', `${durationSec}s`, '--latency'];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.script) args.push('-s', o.script);
  if (o.timeoutSec) args.push('--timeout', `${o.timeoutSec}s`);
  args.push(url);
  const before = Object.entries(o.watch ?? {}).map(([name, pid]) => [name, cpuSnapshot(pid)] as const);
  const kids0 = childrenCpuSeconds();
  const t0 = performance.now();
  const out = execFileSync('wrk', args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const wall = (performance.now() - t0) / 1000;
  const wrkCores = (childrenCpuSeconds() - kids0) / wall;
  const cpu: Record<string, CpuUse> = {};
  for (const [name, snap] of before) cpu[name] = cpuUse(snap, cpuSnapshot(snap.pid), wall);
  const lat = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)`, 'm').exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const tr = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  const reqs = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const [connect, read, write, timeout] = (sock?.slice(1) ?? []).map(Number);
  const socketErrors = (connect ?? 0) + (o.serverCloses ? 0 : (read ?? 0)) + (write ?? 0) + (timeout ?? 0);
  return {
    rps,
    p50ms: lat('50'),
    p99ms: lat('99'),
    bytesPerSec: tr ? toBytes(tr[1]!, tr[2]!) : NaN,
    requests: reqs,
    errors: non2xx + socketErrors,
    non2xx,
    socketErrors,
    durationSec,
    wrkCores,
    threads,
    cpu,
  };
}

/** Why a set of runs is not a valid measurement (errors, non-2xx, nothing done), or undefined. */
export function invalid(runs: Record<string, WrkResult | WrkResult[] | undefined>): string | undefined {
  const why: string[] = [];
  for (const [name, v] of Object.entries(runs)) {
    const rs = v === undefined ? [] : Array.isArray(v) ? v : [v];
    const sum = (f: (r: WrkResult) => number) => rs.reduce((n, r) => n + f(r), 0);
    if (sum((r) => r.non2xx)) why.push(`${name} ${sum((r) => r.non2xx)} non-2xx`);
    if (sum((r) => r.socketErrors)) why.push(`${name} ${sum((r) => r.socketErrors)} socket errors`);
    if (rs.some((r) => !(r.requests > 0))) why.push(`${name} no requests`);
  }
  return why.length ? why.join(', ') : undefined;
}

// ---- CPU accounting (Linux /proc) ----

export interface CpuSnapshot {
  pid: number;
  /** CPU seconds per thread id, over the process and its descendants. */
  threads: Map<number, number>;
}

export interface CpuUse {
  /** CPU seconds per wall second over the tree (2.0 = two cores busy). */
  cores: number;
  /** The busiest single thread's share of one core: near 1.0, an event loop is saturated. */
  busiest: number;
}

function statCpu(path: string): number {
  const f = readFileSync(path, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`))
      kids.push(
        ...readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number),
      );
  } catch {
    kids = [];
  }
  return [pid, ...kids.flatMap(descendants)];
}

export function cpuSnapshot(pid: number): CpuSnapshot {
  const threads = new Map<number, number>();
  for (const p of descendants(pid)) {
    try {
      for (const tid of readdirSync(`/proc/${p}/task`))
        threads.set(Number(tid), statCpu(`/proc/${p}/task/${tid}/stat`));
    } catch {
      // exited meanwhile
    }
  }
  return { pid, threads };
}

export function cpuUse(a: CpuSnapshot, b: CpuSnapshot, wallSec: number): CpuUse {
  let total = 0;
  let busiest = 0;
  for (const [tid, t] of b.threads) {
    const d = t - (a.threads.get(tid) ?? 0);
    total += d;
    busiest = Math.max(busiest, d);
  }
  return { cores: total / wallSec, busiest: busiest / wallSec };
}

/** CPU seconds of a process tree (nginx: master and workers). */
export function treeCpuSeconds(pid: number): number {
  let n = 0;
  for (const t of cpuSnapshot(pid).threads.values()) n += t;
  return n;
}

/** CPU seconds of this process's waited-for children (wrk, curl) so far. */
function childrenCpuSeconds(): number {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

const SATURATED = 0.85;

/**
 * One line saying which side ran out of CPU in a devutil-vs-anchor pair of runs (both watched as
 * { devutil, anchor }): a server is saturated when its busiest thread used >= 85% of a core (an
 * event loop, an nginx worker) or the machine's cores were all busy; otherwise the figure is not a
 * server ceiling (the load generator, the upstream or the machine's other jobs limited it).
 */
export function saturation(d: WrkResult, n: WrkResult, anchorName: string): string {
  const cores = availableParallelism();
  const side = (name: string, r: WrkResult, key: string) => {
    const u = r.cpu[key];
    if (!u) return `${name} n/a`;
    const sat = u.busiest >= SATURATED ? 'SATURATED' : 'not saturated';
    return `${name} ${u.cores.toFixed(2)} cores, busiest thread ${(u.busiest * 100).toFixed(0)}% (${sat}); wrk ${r.wrkCores.toFixed(2)} cores / ${r.threads} threads`;
  };
  const sat = (r: WrkResult, k: string) => (r.cpu[k]?.busiest ?? 0) >= SATURATED;
  const verdict =
    sat(d, 'devutil') && sat(n, 'anchor')
      ? 'both servers CPU-bound: the ratio compares their ceilings'
      : sat(n, 'anchor')
        ? `${anchorName} CPU-bound, devutil not: devutil was held back elsewhere (wrk, upstream, the machine)`
        : sat(d, 'devutil')
          ? `devutil CPU-bound, ${anchorName} not: the anchor ran below its ceiling, so the ratio overstates devutil`
          : `neither server CPU-bound on ${cores} cores: the load generator or the machine limited both`;
  return `saturation: ${side('devutil', d, 'devutil')} | ${side(anchorName, n, 'anchor')}\n  -> ${verdict}`;
}

export interface Proc {
  url: string;
  port: number;
  pid: number;
  close(): Promise<void>;
}

/**
 * Starts `devutil serve` as a child process (test/helpers/process.ts: temp data dir, relay off) at
 * log level warn with DEVUTIL_* `env`; `readyPath` is polled until it answers. One load generator
 * on one address drives everything, so the per-client connection cap is off (the total stays).
 */
export async function startDevutil(env: Record<string, string> = {}, readyPath = '/healthz'): Promise<Proc> {
  const p = await startDevutilProcess({
    DEVUTIL_LOG_LEVEL: 'warn',
    DEVUTIL_MAX_CONNECTIONS_PER_CLIENT: '0',
    ...env,
  });
  if (readyPath !== '/healthz') await waitHttp(p.url + readyPath, 30_000);
  return {
    url: p.url,
    port: p.port,
    pid: p.proc.pid ?? 0,
    close: async () => {
      await p.stop();
    },
  };
}

/**
 * Starts nginx (single worker, access log off, sendfile on) with `serverBody` inside
 * `server { listen PORT; ... }` (test/helpers/nginx.ts). `http` adds directives at http{} level.
 */
export async function startNginx(serverBody: string, http = '', readyPath = '/'): Promise<Proc> {
  requireCommand('nginx', 'nginx-light');
  const n = await startNginxProcess(serverBody, http, { readyPath });
  // An anchor that answers 403 (workers without read access) or 404 would be measured as "fast".
  const r = await fetch(n.url + readyPath);
  await r.arrayBuffer();
  if (r.status !== 200) {
    await n.close();
    throw new Error(`nginx anchor answers ${readyPath} with ${r.status}, not 200: ${n.errors().slice(-500)}`);
  }
  return { url: n.url, port: n.port, pid: n.pid, close: n.close };
}

/** Resident set size of a process in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** CPU seconds (user + system) a process has used so far (Linux /proc). */
export function cpuSecondsOf(pid: number): number {
  const t = cpuTimesOf(pid);
  return t.user + t.system;
}

/**
 * CPU seconds a process has used so far in user space and in the kernel (Linux /proc): a server's
 * own code shows in the first, the socket work it asks for (the same for two servers sending the
 * same bytes with the same system calls) in the second.
 */
export function cpuTimesOf(pid: number): { user: number; system: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

export interface Row {
  metric: string;
  devutil: number;
  anchor: number;
  unit: string;
  /** true when bigger is better (req/s), false for latency/RSS; the ratio is always devutil/anchor. */
  higherIsBetter: boolean;
  /** Target ratio devutil/anchor, when the issue names one. */
  target?: number;
  /** Set (to the reason) when the runs behind this row had errors: no verdict is printed. */
  invalid?: string | undefined;
}

const fmt = (n: number) => (Number.isFinite(n) ? (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2)) : 'n/a');

/**
 * The header every benchmark prints first: what it measures, the runtime devutil and the bench run
 * on (the bench's own node: startDevutil uses process.execPath) and how busy the machine is.
 */
export function header(what: string): void {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`# ${what}`);
  console.log(`# runtime: node ${process.version}; ${availableParallelism()} cores; load average ${load}`);
  if (Number(process.versions.node.split('.')[0]) < 24)
    console.log('# NOTE: production runs Node 24/26; figures on this runtime are not the ones to quote');
}

/** Prints each figure and the ratio devutil/anchor, with the target verdict where there is one. */
export function report(title: string, anchorName: string, rows: Row[]): void {
  console.log(`\n== ${title} (devutil vs ${anchorName}; node ${process.version}) ==`);
  console.log(`${'metric'.padEnd(34)} ${'devutil'.padStart(12)} ${anchorName.padStart(12)}  ratio   target`);
  for (const r of rows) {
    const ratio = r.devutil / r.anchor;
    let verdict = '';
    if (r.invalid) verdict = `NOT VALID (${r.invalid})`;
    else if (r.target !== undefined && !Number.isFinite(ratio)) verdict = 'NOT VALID (no figure)';
    else if (r.target !== undefined) {
      const met = r.higherIsBetter ? ratio >= r.target : ratio <= r.target;
      verdict = `${r.higherIsBetter ? '>=' : '<='}${r.target} ${met ? 'MET' : 'NOT MET'}`;
    }
    console.log(
      `${`${r.metric} (${r.unit})`.padEnd(34)} ${fmt(r.devutil).padStart(12)} ${fmt(r.anchor).padStart(12)}  ${fmt(ratio).padStart(5)}x  ${verdict}`,
    );
  }
}

export function tempFile(name: string, content: string | Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), 'devutil-bench-'));
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

/** The runtime's floor for start-up: a bare node:http server answering the same path. */
export const BARE_SERVER = `require('node:http').createServer((q, s) => s.end('{"ip":"127.0.0.1"}')).listen(+process.env.DEVUTIL_PORT, '127.0.0.1')`;

function answered(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/rest/api/v1/ip' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function startOnce(
  cmd: string,
  args: string[],
  cwd: string,
  dataDir: string,
  settled?: () => boolean,
): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const child: ChildProcess = spawn(cmd, args, {
    cwd,
    stdio: 'ignore',
    // Its own process group, stopped as a whole: SIGTERM to `npm start` alone left the server it
    // started (and the server's PlantUML JVM) running after every round.
    detached: true,
    env: {
      ...process.env,
      PATH: `${process.execPath.replace(/\/node$/, '')}:${process.env['PATH'] ?? ''}`,
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_DATA_DIR: dataDir,
      DEVUTIL_RELAY_PORT: String(await freePort()),
      DEVUTIL_RELAY_STATUS_PORT: '0',
      DEVUTIL_LOG_LEVEL: 'warn',
    },
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited ${child.exitCode}`);
      if (await answered(port)) {
        const ms = performance.now() - t0;
        // Kept running (up to 5 min) until what a first start leaves behind is there.
        for (const end = Date.now() + 300_000; settled && !settled() && Date.now() < end; )
          await new Promise((r) => setTimeout(r, 250));
        return ms;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    const exited = child.exitCode === null ? new Promise((r) => child.once('exit', r)) : null;
    try {
      process.kill(-(child.pid as number), 'SIGTERM');
    } catch {
      // the whole group has exited already
    }
    await exited;
  }
}

/** Whether a file named like `name` is anywhere under `dir`. */
function hasFile(dir: string, name: RegExp): boolean {
  try {
    return readdirSync(dir, { recursive: true }).some((f) => name.test(String(f).split('/').pop() ?? ''));
  } catch {
    return false;
  }
}

/** The middle of `xs` (the upper middle for an even count), NaN for none; `xs` is left as it is. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
}

/**
 * Milliseconds from spawning `cmd args` in `cwd` to its first answered /rest/api/v1/ip: the median of
 * `runs` starts on one data directory, after one start that is not counted (it creates the relay
 * identity and fills Node's compile cache, as a first start does).
 */
export async function startupMedian(
  cmd: string,
  args: string[],
  o: { cwd: string; runs: number; devutil?: boolean },
): Promise<number> {
  const dataDir = tempDir('devutil-bench-start-');
  // devutil's first start runs until the PlantUML class archive is trained (a warm data dir has one):
  // killed right after its first answer, every later start would train it again.
  const warm = o.devutil ? () => hasFile(dataDir, /^cds-.*\.jsa$/) : undefined;
  const first = await startOnce(cmd, args, o.cwd, dataDir, warm);
  console.log(`${[cmd, ...args].join(' ').slice(-40)}: first start ${first.toFixed(0)} ms (not counted)`);
  const all: number[] = [];
  for (let i = 0; i < o.runs; i++) all.push(await startOnce(cmd, args, o.cwd, dataDir));
  return median(all);
}

/**
 * The sum of `of(pid)` over a process and all its descendants (JVMs, browsers); a process that
 * exited meanwhile (NaN or unreadable) counts 0.
 */
export function treeSum(pid: number, of: (pid: number) => number): number {
  const kids = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(e)]);
    } catch {}
  }
  let total = 0;
  const walk = (p: number) => {
    try {
      const v = of(p);
      if (Number.isFinite(v)) total += v;
    } catch {}
    for (const c of kids.get(p) ?? []) walk(c);
  };
  walk(pid);
  return total;
}

/** RSS of a process tree in bytes; threads are in their process's RSS. */
export function treeRss(pid: number): number {
  return treeSum(pid, rssOf);
}

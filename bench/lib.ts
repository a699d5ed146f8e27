// Benchmark harness: start devutil (a real child process) and an anchor side by side on loopback,
// drive both with the same wrk load, print each figure and the ratio. Not run in CI.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/ports.ts';
import { startDevutilProcess } from '../test/helpers/process.ts';

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  bytesPerSec: number;
  requests: number;
  errors: number;
}

export interface WrkOptions {
  connections?: number;
  durationSec?: number;
  threads?: number;
  /** Path of a wrk Lua script (e.g. for POST bodies). */
  script?: string;
  headers?: Record<string, string>;
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

/** Runs wrk with --latency and parses its summary. */
export function wrk(url: string, o: WrkOptions = {}): WrkResult {
  requireCommand('wrk');
  const args = [
    '-t',
    String(o.threads ?? 1),
    '-c',
    String(o.connections ?? 32),
    '-d',
    `${o.durationSec ?? 10}s`,
    '--latency',
  ];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.script) args.push('-s', o.script);
  args.push(url);
  const out = execFileSync('wrk', args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const lat = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)`, 'm').exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const tr = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  const reqs = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errs = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = Number(errs?.[1] ?? 0) + (sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return {
    rps,
    p50ms: lat('50'),
    p99ms: lat('99'),
    bytesPerSec: tr ? toBytes(tr[1]!, tr[2]!) : NaN,
    requests: reqs,
    errors,
  };
}

export interface Proc {
  url: string;
  port: number;
  pid: number;
  close(): Promise<void>;
}

async function waitHttp(url: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error(`${url} did not come up in ${ms}ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function stopper(proc: ChildProcess, cleanup?: () => void): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      const done = () => {
        cleanup?.();
        resolve();
      };
      if (proc.exitCode !== null || proc.signalCode !== null) return done();
      proc.once('exit', done);
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
    });
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
  if (readyPath !== '/healthz') await waitHttp(p.url + readyPath);
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
 * Starts nginx (single worker, access log off) with `serverBody` inside `server { listen PORT; ... }`.
 * `http` adds directives at http{} level (upstreams, caches).
 */
export async function startNginx(serverBody: string, http = '', readyPath = '/'): Promise<Proc> {
  requireCommand('nginx', 'nginx-light');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'devutil-nginx-'));
  const conf = `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  default_type application/octet-stream;
  sendfile on; tcp_nopush on; keepalive_requests 100000;
  ${http}
  server {
    listen 127.0.0.1:${port};
    ${serverBody}
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const proc = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(url + readyPath);
  return {
    url,
    port,
    pid: proc.pid ?? 0,
    close: stopper(proc, () => rmSync(dir, { recursive: true, force: true })),
  };
}

/** Resident set size of a process in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** CPU seconds (user + system) a process has used so far (Linux /proc). */
export function cpuSecondsOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
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
    if (r.target !== undefined) {
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

// Real nginx as a child process on a free loopback port with a generated config (offload tests,
// benchmarks' anchors), and the offload snippet of deploy/nginx.conf so tests run what we document.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

export interface Nginx {
  url: string;
  port: number;
  pid: number;
  /** The error log so far (for a failing assertion's message). */
  errors(): string;
  /**
   * `nginx -s reload` with `http` in place of the http-level directives it started with; resolves
   * once the workers of the old configuration have finished their requests and exited.
   */
  reload(http: string): Promise<void>;
  close(): Promise<void>;
}

/** The worker processes of an nginx master (its children). */
function workersOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGTERM (SIGKILL after 5 s) to a server started by a test, then removes its directory. */
export function stopChild(proc: ChildProcess, dir: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      rmSync(dir, { recursive: true, force: true });
      resolve();
    };
    if (proc.exitCode !== null || proc.signalCode !== null) return done();
    proc.once('exit', done);
    proc.kill('SIGTERM');
    setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
  });
}

/** Polls `url` until it answers below 500 (up), failing after `ms`. */
export async function waitHttp(url: string, ms: number): Promise<void> {
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

/**
 * Starts nginx (one worker, access log off, sendfile on) with `serverBody` inside
 * `server { listen 127.0.0.1:PORT; ... }`; `http` adds directives at http{} level (upstreams).
 */
export async function startNginx(
  serverBody: string,
  http = '',
  o: { readyPath?: string; workers?: number } = {},
): Promise<Nginx> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'devutil-nginx-'));
  const render = (http: string) => `daemon off;
worker_processes ${o.workers ?? 1};
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
  writeFileSync(join(dir, 'nginx.conf'), render(http));
  const proc = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr?.on('data', (c) => {
    stderr += c;
  });
  const url = `http://127.0.0.1:${port}`;
  const errors = () => {
    try {
      return stderr + readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      return stderr;
    }
  };
  const close = () => stopChild(proc, dir);
  try {
    await waitHttp(url + (o.readyPath ?? '/'), 15_000);
  } catch (err) {
    const log = errors();
    await close();
    throw new Error(`${(err as Error).message}\n${log}`);
  }
  const reload = async (next: string) => {
    const pid = proc.pid ?? 0;
    const old = workersOf(pid);
    writeFileSync(join(dir, 'nginx.conf'), render(next));
    proc.kill('SIGHUP');
    const until = Date.now() + 60_000;
    while (workersOf(pid).some((w) => old.includes(w)) || workersOf(pid).length === 0) {
      if (Date.now() > until) throw new Error(`nginx did not finish its reload in 60 s:\n${errors()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { url, port, pid: proc.pid ?? 0, errors, reload, close };
}

const DEPLOY = new URL('../../deploy/nginx.conf', import.meta.url).pathname;

/**
 * The offload locations of deploy/nginx.conf (between its `# >>> devutil offload` and
 * `# <<< devutil offload` lines) with the documented data directory replaced by `dataDir`.
 */
export function offloadLocations(dataDir: string): string {
  const text = readFileSync(DEPLOY, 'utf8');
  const m = /# >>> devutil offload\n([\s\S]*?)# <<< devutil offload/.exec(text);
  if (!m?.[1]) throw new Error('deploy/nginx.conf has no devutil offload block');
  return m[1].replaceAll('/var/lib/devutil/', `${dataDir}/`);
}

// devutil as users run it: `bin/devutil.js serve` as a child process on a free loopback port.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { sharedDiagramsBuild, tempDir } from './server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface DevutilProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /**
   * The first output line that matches, waiting for it up to `ms` (15 s): the process writes a log
   * line after it answered, so a client can have the answer before the line reaches this pipe.
   * Rejects with the output's tail when none comes.
   */
  waitForLine(match: (line: string) => boolean, ms?: number): Promise<string>;
  /** SIGTERM, then SIGKILL after 30 s; resolves with the exit code. */
  stop(): Promise<number | null>;
  kill9(): Promise<void>;
}

export interface StartOptions {
  /** A command that execs the rest, e.g. ['prlimit', '--nofile=600:600', '--'] (same pid). */
  wrapper?: string[];
  /** How long the process has to answer /healthz before it is killed and the start fails (45 s). */
  startTimeoutMs?: number;
}

/** `env` is added to the defaults below; a key set to undefined removes a default (DEVUTIL_HOST). */
export async function startDevutilProcess(
  env: Record<string, string | undefined> = {},
  args: string[] = [],
  opts: StartOptions = {},
): Promise<DevutilProcess> {
  // A free port can be taken by a parallel test process before the child binds it: try another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(env, args, opts.wrapper ?? [], opts.startTimeoutMs ?? 45_000);
    } catch (err) {
      if (attempt >= 3 || env['DEVUTIL_PORT'] || !/EADDRINUSE|address already in use/.test(String(err)))
        throw err;
    }
  }
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

async function startOnce(
  env: Record<string, string | undefined>,
  args: string[],
  wrapper: string[],
  startTimeoutMs: number,
): Promise<DevutilProcess> {
  const port = Number(env['DEVUTIL_PORT'] ?? (await freePort()));
  const url = `http://127.0.0.1:${port}`;
  const argv = [...wrapper, process.execPath, join(ROOT, 'bin/devutil.js'), 'serve', ...args];
  const proc = spawn(argv[0] as string, argv.slice(1), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: definedOnly({
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_PUBLIC_URL: url,
      DEVUTIL_DATA_DIR: tempDir(),
      DEVUTIL_LOG_LEVEL: 'info',
      DEVUTIL_RELAY_ENABLED: 'false',
      // SIGTERM stops at once unless a test is about the drain (it sets its own delay).
      DEVUTIL_DRAIN_DELAY_MS: '0',
      // No JVM started (and no class archive made) at start-up: on a busy machine that took minutes
      // and the start timed out. Diagrams still render, the JVM starting on the first one; a test
      // about start-up itself sets 'true'.
      DEVUTIL_DIAGRAMS_PRESTART: 'false',
      DEVUTIL_DIAGRAMS_BUILD_DIR: sharedDiagramsBuild(false, env),
      ...env,
    }),
  });
  let out = '';
  proc.stdout?.on('data', (c) => {
    out += c;
  });
  proc.stderr?.on('data', (c) => {
    out += c;
  });
  // Exited, and its output read to the end: 'exit' can come before the pipes gave their last lines
  // ('close' comes after them, unless a child of its own holds them: then 5 s at most).
  const closed = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code))).then(
    async (code) => {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((r) => (t = setTimeout(r, 5000)))]);
      clearTimeout(t);
      return code;
    },
  );
  const until = Date.now() + startTimeoutMs;
  // What the probes last saw, for the error: a refused connection, a probe past its deadline, a status.
  let lastProbe = 'no probe yet';
  let probes = 0;
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`devutil exited early (${proc.exitCode}):\n${out.slice(-2000)}`);
    try {
      probes++;
      // Each probe has its own deadline: a process that accepts and never answers is not up.
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
      if (r.ok) break;
      lastProbe = `HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`;
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      lastProbe = `${String(err)}${cause ? ` (cause: ${String(cause)})` : ''}`;
    }
    if (Date.now() > until) {
      proc.kill('SIGKILL');
      throw new Error(
        `devutil did not come up on ${port} (${probes} probes, the last: ${lastProbe}):\n${out.slice(-2000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port,
    proc,
    output: () => out,
    waitForLine: async (match, ms = 15_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const line = out.split('\n').find(match);
        if (line !== undefined) return line;
        if (Date.now() > deadline)
          throw new Error(`no matching output line in ${ms} ms:\n${out.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        // Past devutil's own shutdown deadline (10 s, 12 s for a cluster primary) with room for a
        // busy machine: a kill sooner would fail a slow but clean shutdown (exit code null).
        const t = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        const code = await exited;
        clearTimeout(t);
        return code;
      }
      return proc.exitCode;
    },
    kill9: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/**
 * Starts several servers or processes at once (`[a, b] = await startAll([startDevutilProcess(env),
 * ...])`; anything with stop() or close()). When one start fails, those that came up are stopped
 * before the failure is thrown: with a bare Promise.all the instance that did come up is assigned to
 * nothing, no `after` hook can stop it, and what it holds open (a child process, a Redis connection)
 * keeps the test file alive until the runner's per-file timeout.
 */
export async function startAll<T extends Promise<Stoppable>[]>(
  starts: [...T],
): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed)
    return settled.map((s) => (s as PromiseFulfilledResult<Stoppable>).value) as {
      [K in keyof T]: Awaited<T[K]>;
    };
  await Promise.allSettled(settled.map((s) => (s.status === 'fulfilled' ? stopIt(s.value) : undefined)));
  throw failed.reason;
}

type Stoppable = { stop(): Promise<unknown> } | { close(): Promise<unknown> };

function stopIt(x: Stoppable): Promise<unknown> {
  return 'stop' in x ? x.stop() : x.close();
}

// A real redis-server on a free loopback port, for the shared-limit and scale-out tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { freePort } from './ports.ts';
import { waitFor } from './wait.ts';

export interface RedisHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops and starts the same server again on the same port (fault tests). */
  restart(): Promise<void>;
  /** Sends a signal to the server (SIGSTOP freezes it with its connections open, SIGCONT thaws it). */
  signal(sig: NodeJS.Signals): void;
}

/** What a process that does not listen is doing: its state and kernel wait channel (Linux). */
function processState(proc?: ChildProcess): string {
  if (!proc?.pid) return 'not started';
  try {
    const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
    let wchan = '';
    try {
      wchan = readFileSync(`/proc/${proc.pid}/wchan`, 'utf8');
    } catch {} // not readable everywhere
    return `pid ${proc.pid} ${/^State:\s*(.*)$/m.exec(status)?.[1] ?? '?'}${wchan ? `, waiting in ${wchan}` : ''}`;
  } catch {
    return `pid ${proc.pid} gone`;
  }
}

/**
 * Until `port` accepts connections. `proc`, the server that should listen there: an exit ends the
 * wait at once. The deadline allows a start on a loaded machine (5 s was once too short in CI). A
 * wait that runs out says what the last connect met and what the process was doing.
 */
async function waitForPort(
  port: number,
  proc?: ChildProcess,
  ms = 30_000,
  what = 'redis-server',
): Promise<void> {
  const until = Date.now() + ms;
  let last = 'no attempt';
  for (;;) {
    if (proc && (proc.exitCode !== null || proc.signalCode !== null))
      throw new Error(
        `${what} for port ${port} exited (${proc.exitCode ?? proc.signalCode}) before it listened`,
      );
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', (err: NodeJS.ErrnoException) => {
        last = err.code ?? err.message;
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > until)
      throw new Error(
        `${what} did not listen on ${port} in ${ms} ms (last connect: ${last}; ${processState(proc)})`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts `command` and waits until it listens on `port` (`ms` at most). A start that fails is killed
 * (its handle would keep the test file's process alive to the run's budget), and the error carries
 * the end of the process's output.
 */
async function spawnListening(
  command: string,
  args: string[],
  port: number,
  ms: number,
): Promise<ChildProcess> {
  let out = '';
  const keep = (c: Buffer) => {
    out = (out + c).slice(-2000);
  };
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  try {
    await waitForPort(port, proc, ms, command);
    return proc;
  } catch (err) {
    await killed(proc);
    const tail = out.trim().split('\n').slice(-5).join(' | ');
    throw new Error(`${(err as Error).message}; its output: ${tail || '(none)'}`);
  }
}

/**
 * `start` on a free port, and on another one when the start fails (10 s to listen), up to 3 times.
 * freePort() already passes over ports no client reaches (ports.ts); this covers what it cannot see.
 */
async function onFreePort<T>(what: string, start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (err) {
      if (attempt >= 3) throw err;
      process.stderr.write(`# ${what}: ${(err as Error).message}; starting it again on another port\n`);
    }
  }
}

/** A redis-server's arguments on loopback `port`, without persistence, then `extra`. */
const serverArgs = (port: number, ...extra: string[]) => [
  '--port',
  String(port),
  '--bind',
  '127.0.0.1',
  '--save',
  '',
  '--appendonly',
  'no',
  ...extra,
];

/** A redis-server; with `password`, it requires it (requirepass) and `url` carries it. */
export async function startRedis(o: { password?: string } = {}): Promise<RedisHandle> {
  const auth = o.password ? ['--requirepass', o.password] : [];
  const first = await onFreePort('startRedis', async (port) => ({
    port,
    proc: await spawnListening('redis-server', serverArgs(port, ...auth), port, 10_000),
  }));
  const { port } = first;
  let proc = first.proc;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  return {
    url: `redis://${o.password ? `:${o.password}@` : ''}127.0.0.1:${port}`,
    port,
    stop,
    restart: async () => {
      await stop();
      proc = await spawnListening('redis-server', serverArgs(port, ...auth), port, 30_000);
    },
    signal: (sig) => {
      proc.kill(sig);
    },
  };
}

export interface SentinelGroup {
  /** The master name the sentinels monitor. */
  name: string;
  /** `127.0.0.1:port` of each sentinel (DEVUTIL_REDIS_SENTINELS). */
  sentinels: string[];
  /** requirepass of the data nodes, '' when none. */
  password: string;
  /** The primary's port as the first sentinel reports it. */
  primaryPort(): Promise<number>;
  /** Waits until every replica has applied everything the primary has written. */
  synced(): Promise<void>;
  /** SENTINEL FAILOVER; resolves once a replica answers as the new primary and the sentinels say so. */
  failover(): Promise<{ from: number; to: number }>;
  /** SIGKILLs the primary; resolves once it is dead, with a promise of the replica's promotion. */
  killPrimary(): Promise<{ from: number; promoted: Promise<{ from: number; to: number }> }>;
  stop(): Promise<void>;
}

/**
 * How long the group may take to settle (start, promote, sync). A group needs about 5 s to start on
 * an idle machine (its sentinels find each other by a hello every 2 s); CI runs it beside other
 * files, and a start once ran out of 20 s there.
 */
const UNTIL_MS = 60_000;

interface Proc {
  port: number;
  proc: ChildProcess;
}

const killed = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });

/**
 * A primary, a replica and three sentinels (quorum 2) on loopback, for failover tests. Everything
 * started is stopped by stop(), and by this function itself when a start fails.
 */
export async function startSentinels(
  o: { password?: string; sentinelPassword?: string } = {},
): Promise<SentinelGroup> {
  const { Redis } = await import('ioredis');
  const { mkdtemp, rm, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const name = 'devutil-test';
  const password = o.password ?? '';
  const dir = await mkdtemp(join(tmpdir(), 'devutil-sentinel-'));
  const procs: Proc[] = [];
  const data: Proc[] = [];
  const sentinels: Proc[] = [];
  const admin: InstanceType<typeof Redis>[] = [];
  // Admin clients of the group: a dropped or refused connection is tried again (a node being
  // failed over, a connect lost on a loaded machine), and no command waits more than 5 s, so a
  // poll below always gets back to its deadline.
  const client = (port: number, pass: string) => {
    const c = new Redis({
      port,
      host: '127.0.0.1',
      password: pass || undefined,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => 200,
      commandTimeout: 5_000,
    });
    c.on('error', () => {});
    admin.push(c);
    return c;
  };
  const stop = async () => {
    for (const c of admin) c.disconnect();
    await Promise.all(procs.map((p) => killed(p.proc)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const auth = password ? ['--requirepass', password, '--masterauth', password] : [];
    const launch = (what: 'redis-server' | 'redis-sentinel', argsFor: (port: number) => Promise<string[]>) =>
      onFreePort(`sentinel test group, ${what}`, async (port) => {
        const p = { port, proc: await spawnListening(what, await argsFor(port), port, 10_000) };
        procs.push(p);
        return p;
      });
    const node = async (args: string[]) => {
      // --dir: a replica stores the snapshot it syncs from (dump.rdb) there, not in the checkout.
      const p = await launch('redis-server', async (port) =>
        serverArgs(port, '--dir', dir, ...auth, ...args),
      );
      data.push(p);
      return p;
    };
    const primary = await node([]);
    await node(['--replicaof', '127.0.0.1', String(primary.port)]);
    for (let i = 0; i < 3; i++) {
      const p = await launch('redis-sentinel', async (port) => {
        const conf = join(dir, `sentinel-${port}.conf`);
        const lines = [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 10000`,
          ...(password ? [`sentinel auth-pass ${name} ${password}`] : []),
          ...(o.sentinelPassword
            ? [`requirepass ${o.sentinelPassword}`, `sentinel sentinel-pass ${o.sentinelPassword}`]
            : []),
        ];
        await writeFile(conf, `${lines.join('\n')}\n`);
        return [conf];
      });
      sentinels.push(p);
    }
    const sentinelClients = sentinels.map((s) => client(s.port, o.sentinelPassword ?? ''));
    const ask = (i: number, ...args: string[]) =>
      (sentinelClients[i] as InstanceType<typeof Redis>).call('SENTINEL', ...args) as Promise<unknown>;
    // A sentinel that is still starting or electing answers with errors: poll through them. A test
    // answers true, or what it still misses; a wait that runs out says what it saw last.
    const until = async (what: string, test: () => Promise<true | string>) => {
      let last = 'nothing yet';
      const started = Date.now();
      try {
        const held = async () => {
          try {
            const r = await test();
            if (r === true) return true;
            last = r;
          } catch (err) {
            last = `error: ${(err as Error).message}`;
          }
          return false;
        };
        await waitFor(held, `sentinel test group: ${what}`, UNTIL_MS);
      } catch {
        throw new Error(
          `sentinel test group: ${what}: not after ${Date.now() - started} ms; last seen: ${last}`,
        );
      }
    };
    const fields = (row: unknown): Record<string, string> => {
      const out: Record<string, string> = {};
      const a = row as string[];
      for (let i = 0; i + 1 < a.length; i += 2) out[a[i] as string] = a[i + 1] as string;
      return out;
    };
    const primaryPort = async () => Number(((await ask(0, 'get-master-addr-by-name', name)) as string[])[1]);
    // Ready for a failover: each sentinel knows the replica (up, linked) and the two other sentinels.
    await until('sentinels see the replica and each other', async () => {
      for (let i = 0; i < 3; i++) {
        const reps = ((await ask(i, 'replicas', name)) as unknown[]).map(fields);
        if (!reps.some((r) => r['flags'] === 'slave' && r['master-link-status'] === 'ok'))
          return `sentinel ${i} sees replicas ${JSON.stringify(reps.map((r) => [r['port'], r['flags'], r['master-link-status']]))}`;
        const others = ((await ask(i, 'sentinels', name)) as unknown[]).length;
        if (others < 2) return `sentinel ${i} knows ${others} other sentinels`;
      }
      return true;
    });
    const dataClient = new Map<number, InstanceType<typeof Redis>>();
    const dc = (port: number) => {
      let c = dataClient.get(port);
      if (!c) {
        c = client(port, password);
        dataClient.set(port, c);
      }
      return c;
    };
    const info = async (port: number) => {
      const out: Record<string, string> = {};
      for (const line of (await dc(port).info('replication')).split('\r\n')) {
        const [k, v] = line.split(':');
        if (k && v !== undefined) out[k] = v;
      }
      return out;
    };
    const promoted = async (from: number) => {
      let to = from;
      await until('a replica promoted', async () => {
        to = await primaryPort();
        if (to === from) return `sentinel 0 still names ${from}`;
        for (let i = 1; i < 3; i++) {
          const named = Number(((await ask(i, 'get-master-addr-by-name', name)) as string[])[1]);
          if (named !== to) return `sentinel 0 names ${to}, sentinel ${i} ${named}`;
        }
        const role = (await info(to))['role'];
        return role === 'master' || `${to} is still a ${role}`;
      });
      return { from, to };
    };
    return {
      name,
      sentinels: sentinels.map((s) => `127.0.0.1:${s.port}`),
      password,
      primaryPort,
      async synced() {
        await until('replicas in sync', async () => {
          const p = await info(await primaryPort());
          const n = Number(p['connected_slaves'] ?? 0);
          if (n < 1) return 'no replica connected';
          for (let i = 0; i < n; i++) {
            const r = Object.fromEntries((p[`slave${i}`] ?? '').split(',').map((kv) => kv.split('=')));
            if (r['state'] !== 'online' || r['offset'] !== p['master_repl_offset'])
              return `replica ${i} ${r['state']} at ${r['offset']} of ${p['master_repl_offset']}`;
          }
          return true;
        });
      },
      async failover() {
        const from = await primaryPort();
        await ask(0, 'failover', name);
        return promoted(from);
      },
      async killPrimary() {
        const from = await primaryPort();
        const p = data.find((d) => d.port === from);
        if (p) await killed(p.proc);
        const done = promoted(from);
        done.catch(() => {}); // awaited by the caller; not unhandled if the caller failed first
        return { from, promoted: done };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

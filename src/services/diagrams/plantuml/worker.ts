// One warm JVM running the worker entry point. It is its own process group, so killing it also ends
// the `dot` children it spawned (docs/protocols/plantuml-server.md §6: the engine has no way to stop
// a render). A render given up on is abandoned instead (the JVM goes on serving the others): its
// thread is put at the lowest CPU priority here and ends with its render.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { delimiter, join } from 'node:path';
import { minimalEnv, WORKER_CLASS, WORKER_JAR } from './java.ts';
import {
  encodeFetched,
  encodeRequest,
  FrameReader,
  parseReply,
  type WorkerReply,
  type WorkerRequest,
} from './protocol.ts';

/** What the engine gets for a URL it reads (includes.ts). */
export interface FetchAnswer {
  status: number;
  type: string;
  body: Buffer;
  /** Identifies this answer's content, recorded with every render that may have used it. */
  hash: string;
}

export interface WorkerOptions {
  java: string;
  jar: string;
  classDir: string;
  heapBytes: number;
  /** The heap it starts with (-Xms, at most heapBytes); absent: Java's default, 1/64 of the RAM. */
  initialHeapBytes?: number;
  /** The profile the engine runs (see engineProfile). */
  profile: string;
  urlAllowlist: readonly string[];
  limitSize: number;
  /** Render threads inside the JVM (requests it runs at once). */
  threads: number;
  /** The render deadline: the JVM kills `dot` processes of abandoned renders this much (+2 s) old. */
  timeoutMs?: number;
  /** Answers the engine's URL reads; absent: every URL is refused. */
  fetch?: (url: string) => Promise<FetchAnswer>;
  /** How long the JVM waits for one fetch answer. */
  fetchTimeoutMs?: number;
  /** A class-data sharing archive to map (cds.ts); a worker that cannot use it does not start. */
  sharedArchive?: string;
  /** Training run: load what renders load, exit, and write the archive here. */
  trainArchive?: string;
  /** Run the whole JVM (and the `dot` it starts) at the lowest CPU priority. */
  nice?: boolean;
  /** The `dot` the engine runs (GRAPHVIZ_DOT; dot.ts bounds it); absent: the engine finds its own. */
  dot?: string;
  /** -XX:TrimNativeHeapInterval, ms (a JVM that has it: JavaInfo.nativeTrim); absent: none. */
  trimNativeHeapMs?: number;
  /** More JVM flags (benchmarks try them one at a time). */
  jvmFlags?: readonly string[];
  onStderr?: (line: string) => void;
}

interface Pending {
  resolve: (r: WorkerReply) => void;
  reject: (e: Error) => void;
  /** URL -> hash of what the engine got while this request was in flight. */
  includes: Map<string, string> | null;
}

const NICE = ['/usr/bin/nice', '/bin/nice'].find((p) => existsSync(p));

/** The render was given up on (its deadline passed); its thread runs out in the JVM. */
export class RenderAbandoned extends Error {}

/**
 * Lowest CPU priority for one thread of the JVM (Linux: the nice value is per thread, and
 * setpriority() takes a thread id). A process may always lower its own threads' priority, never
 * raise it back, which is why an abandoned thread ends with its render.
 */
function lowerPriority(tid: number): void {
  try {
    setPriority(tid, constants.priority.PRIORITY_LOW);
  } catch {} // gone already, or not Linux
}

export class WorkerExited extends Error {
  readonly code: number | null;
  readonly signal: string | null;
  constructor(code: number | null, signal: string | null) {
    super(`worker exited (code ${code}, signal ${signal})`);
    this.code = code;
    this.signal = signal;
  }
}

/**
 * Our INTERNET means the official server's profile with URL includes confined to the allow-list
 * (issue 7); the engine's own INTERNET lets any named host on ports 80/443 through, and its
 * ALLOWLIST profile is exactly "local files no, URLs only allow-listed, stdlib yes".
 */
export function engineProfile(profile: string): string {
  return profile === 'INTERNET' ? 'ALLOWLIST' : profile;
}

export function javaArgs(o: WorkerOptions): string[] {
  return [
    `-Xmx${Math.floor(o.heapBytes / (1024 * 1024))}m`,
    // Java starts with 1/64 of the machine's memory as heap, a third of it the young generation,
    // which a JVM fills (and keeps resident) before its first collection: 120 MiB of an idle
    // worker on a 24 GiB machine, more on a bigger one. A small start grows as renders need it.
    ...(o.initialHeapBytes
      ? [`-Xms${Math.floor(Math.min(o.initialHeapBytes, o.heapBytes) / (1024 * 1024))}m`]
      : []),
    '-Xss8m',
    '-XX:+UseSerialGC',
    // A full collection that finds the heap mostly free shrinks it at once, not a step per
    // collection: the worker's idle collection gives a burst's heap back in one go.
    '-XX:-ShrinkHeapInSteps',
    ...(o.trimNativeHeapMs ? [`-XX:TrimNativeHeapInterval=${o.trimNativeHeapMs}`] : []),
    // While renders run, a full collection leaves 90-95% of the heap free (Java: 40-70%), and the
    // young generation (a share of the heap, set below) grows with it. The serial collector sizes
    // the young generation only there, from the old one: with 16 renders in flight the live set
    // is 20-30 MiB, so 70-80% free kept about 50 MiB young, a young collection every 8-10
    // renders, each promoting the renders in flight (a full one every few seconds); 90-95% keeps
    // 150-200 MiB young and collects every 20 renders (collector CPU per render 0.6 against 1.0 ms,
    // PicoWeb's G1 0.5). The idle collection still shrinks the heap to what is live (it lowers both
    // for its one collection), so an idle worker weighs what it did.
    '-XX:MinHeapFreeRatio=90',
    '-XX:MaxHeapFreeRatio=95',
    // Half the heap young (Java: a third): a render's garbage dies young, and a larger young
    // generation collects it less often. Collector CPU per render 0.7 ms instead of 1.2-1.3 with 4
    // renders in flight and 1.3-1.5 instead of 1.9 with 16 (the test corpus, worker protocol,
    // alternating rounds at load 15-25), peak resident the same (245-250 MiB).
    '-XX:NewRatio=1',
    // A training run only loads classes for the archive (it holds no compiled code): C1 alone loads
    // the same classes as C1+C2 for about 60% of the CPU, where C2 would optimise code it never reuses.
    `-XX:TieredStopAtLevel=${o.trainArchive ? 1 : 4}`,
    // The protocol owns stdout: the JVM's own messages (warnings, a fatal error) go to stderr.
    '-XX:+DisplayVMOutputToStderr',
    '-Xlog:disable',
    '-Xlog:all=warning:stderr',
    // -Xshare:on: an archive the JVM cannot use (damaged, another jar) stops the start at once, and
    // the engine starts the worker again without it, instead of a worker silently running cold.
    ...(o.sharedArchive
      ? ['-Xshare:on', '-XX:+VerifySharedSpaces', `-XX:SharedArchiveFile=${o.sharedArchive}`]
      : []),
    ...(o.trainArchive ? [`-XX:ArchiveClassesAtExit=${o.trainArchive}`, '-Ddevutil.train=true'] : []),
    ...(o.jvmFlags ?? []),
    '-Djava.awt.headless=true',
    '-Dfile.encoding=UTF-8',
    // System properties must come before the main class, or the engine takes them as defines.
    `-DPLANTUML_SECURITY_PROFILE=${engineProfile(o.profile)}`,
    `-DPLANTUML_LIMIT_SIZE=${o.limitSize}`,
    `-Dplantuml.allowlist.url=${o.urlAllowlist.join(';')}`,
    `-Ddevutil.threads=${o.threads}`,
    `-Ddevutil.timeoutMs=${o.timeoutMs ?? 10_000}`,
    `-Ddevutil.fetchTimeoutMs=${o.fetchTimeoutMs ?? 10_000}`,
    '-cp',
    `${o.jar}${delimiter}${join(o.classDir, WORKER_JAR)}`,
    WORKER_CLASS,
  ];
}

export class JavaWorker {
  readonly proc: ChildProcessWithoutNullStreams;
  /** Resolves with the hello frame (engine version, build time) once the JVM is warm enough to take work. */
  readonly ready: Promise<WorkerReply>;
  private pending = new Map<number, Pending>();
  /** Renders given up on whose threads still run: id -> kernel thread id (0 until the JVM says). */
  private abandonedRenders = new Map<number, number>();
  private pings = new Map<number, () => void>();
  private nextId = 1;
  /** The last idle collection's committed heap before and after (bytes); null: none yet. */
  idleGc: { before: number; after: number } | null = null;
  private warmedResolve: () => void = () => {};
  /** Resolves when the JVM finished its warm-up renders (never, if it dies first). */
  readonly warmed: Promise<void> = new Promise((r) => {
    this.warmedResolve = r;
  });
  private isWarm = false;
  /** Called when an abandoned render's thread ends, or a render found the JVM broken. */
  onChange: () => void = () => {};
  /** The LinkageError of the first render that found this JVM's class state broken (protocol.ts). */
  brokenBy: string | null = null;
  private exited: WorkerExited | null = null;
  private exitListeners: ((e: WorkerExited) => void)[] = [];
  private helloed = false;
  /** The class-data archive this JVM was started with. */
  readonly sharedArchive: string | undefined;

  private readonly fetch: WorkerOptions['fetch'];

  constructor(o: WorkerOptions) {
    this.fetch = o.fetch;
    this.sharedArchive = o.sharedArchive;
    // cwd is the worker's own directory, not the server's: nothing for a relative include to find.
    // `nice` execs java in the same process: every thread the JVM starts inherits the priority.
    const [cmd, args] = o.nice && NICE ? [NICE, ['-n', '19', o.java, ...javaArgs(o)]] : [o.java, javaArgs(o)];
    this.proc = spawn(cmd, args, {
      detached: true,
      env: { ...minimalEnv(), ...(o.dot ? { GRAPHVIZ_DOT: o.dot } : {}) },
      stdio: 'pipe',
      cwd: o.classDir,
    });
    const reader = new FrameReader(256 * 1024 * 1024);
    let helloResolve: (r: WorkerReply) => void = () => {};
    let helloReject: (e: Error) => void = () => {};
    this.ready = new Promise((res, rej) => {
      helloResolve = res;
      helloReject = rej;
    });
    this.ready.catch(() => {});
    this.proc.stdout.on('data', (chunk: Buffer) => {
      let frames: Buffer[];
      try {
        frames = reader.push(chunk);
      } catch {
        this.kill();
        return;
      }
      for (const f of frames) {
        const reply = parseReply(f);
        if (!this.helloed) {
          this.helloed = true;
          helloResolve(reply);
          continue;
        }
        if (reply.status === 'fetch') {
          this.answerFetch(reply.id, reply.url ?? '');
          continue;
        }
        if (reply.status === 'warmed') {
          this.isWarm = true;
          this.warmedResolve();
          continue;
        }
        if (reply.status === 'idle-gc') {
          this.idleGc = { before: reply.heapBefore ?? 0, after: reply.heapAfter ?? 0 };
          continue;
        }
        if (reply.status === 'pong') {
          this.pings.get(reply.id)?.();
          this.pings.delete(reply.id);
          continue;
        }
        if (reply.status === 'abandoned') {
          if (this.abandonedRenders.has(reply.id) && reply.tid) {
            this.abandonedRenders.set(reply.id, reply.tid);
            lowerPriority(reply.tid);
          }
          continue;
        }
        // An abandoned render too: its thread may have been interrupted inside a class initializer.
        if (reply.broken !== undefined && this.brokenBy === null) {
          this.brokenBy = reply.broken;
          this.onChange();
        }
        if (this.abandonedRenders.delete(reply.id)) {
          this.onChange(); // an abandoned render ended: its answer goes nowhere
          continue;
        }
        const p = this.pending.get(reply.id);
        this.pending.delete(reply.id);
        if (p?.includes) reply.includes = [...p.includes].map(([url, hash]) => ({ url, hash }));
        p?.resolve(reply);
      }
    });
    let errBuf = '';
    this.proc.stderr.on('data', (d: Buffer) => {
      errBuf += d.toString();
      const lines = errBuf.split('\n');
      errBuf = lines.pop() ?? '';
      if (errBuf.length > 8192) errBuf = '';
      for (const l of lines) if (l.trim()) o.onStderr?.(l.slice(0, 500));
    });
    this.proc.stdin.on('error', () => {}); // EPIPE after a crash: the exit handler reports it
    const onGone = (code: number | null, signal: string | null) => {
      if (this.exited) return;
      this.exited = new WorkerExited(code, signal);
      helloReject(this.exited);
      const all = [...this.pending.values()];
      this.pending.clear();
      this.abandonedRenders.clear();
      for (const p of all) p.reject(this.exited);
      for (const l of this.exitListeners) l(this.exited);
    };
    this.proc.on('exit', onGone);
    this.proc.on('error', (err) => {
      helloReject(err);
      onGone(null, null);
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** True once the JVM said hello (it came up). */
  get started(): boolean {
    return this.helloed;
  }

  get alive(): boolean {
    return this.exited === null;
  }

  onExit(fn: (e: WorkerExited) => void): void {
    if (this.exited) fn(this.exited);
    else this.exitListeners.push(fn);
  }

  /** Requests sent and not answered yet (abandoned renders not counted: their threads were replaced). */
  get inflight(): number {
    return this.pending.size;
  }

  /** Renders given up on whose threads still run. */
  get abandoned(): number {
    return this.abandonedRenders.size;
  }

  /** True once the JVM finished its warm-up renders. */
  get warm(): boolean {
    return this.isWarm;
  }

  private newId(): number {
    const id = this.nextId++;
    if (this.nextId > 0x7fffffff) this.nextId = 1;
    return id;
  }

  /**
   * Sends one request; the pool keeps at most `threads` in flight per worker. When `signal` aborts
   * before the answer, the render is abandoned: the promise rejects with RenderAbandoned at once and
   * the JVM is told to let the render run out on a low-priority thread of its own.
   */
  request(req: WorkerRequest, signal?: AbortSignal): Promise<WorkerReply> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.newId();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.delete(id) || this.exited) return;
        this.abandonedRenders.set(id, 0);
        this.proc.stdin.write(encodeRequest({ op: 'cancel' }, id));
        reject(new RenderAbandoned());
      };
      this.pending.set(id, {
        resolve: (r) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        includes: null,
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.proc.stdin.write(encodeRequest(req, id));
    });
  }

  /** Resolves true when the JVM's reader answers within `ms` (it answers while every render thread is busy). */
  ping(ms: number): Promise<boolean> {
    if (this.exited) return Promise.resolve(false);
    const id = this.newId();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pings.delete(id);
        resolve(false);
      }, ms);
      this.pings.set(id, () => {
        clearTimeout(timer);
        resolve(true);
      });
      this.onExit(() => {
        clearTimeout(timer);
        resolve(false);
      });
      this.proc.stdin.write(encodeRequest({ op: 'ping' }, id));
    });
  }

  /**
   * Answers a URL read of the engine. The JVM does not say which render asked (its URL code runs
   * on a shared thread pool), so the answer is recorded with every request in flight when it was
   * asked and still waiting when it came: a superset, never missing the one that used it.
   */
  private answerFetch(fetchId: number, url: string): void {
    const waiting = [...this.pending.values()];
    const answer = this.fetch
      ? this.fetch(url).catch(
          (): FetchAnswer => ({ status: 502, type: 'text/plain', body: Buffer.alloc(0), hash: 'error' }),
        )
      : Promise.resolve<FetchAnswer>({
          status: 403,
          type: 'text/plain',
          body: Buffer.alloc(0),
          hash: 'refused',
        });
    void answer.then((a) => {
      for (const p of waiting) {
        if (![...this.pending.values()].includes(p)) continue;
        p.includes ??= new Map();
        p.includes.set(url, a.hash);
      }
      if (!this.exited) this.proc.stdin.write(encodeFetched(fetchId, a.status, a.type, a.body));
    });
  }

  /** Kills the JVM and its whole process group (dot children included). */
  kill(): void {
    const pid = this.proc.pid;
    if (pid === undefined || this.exited) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      this.proc.kill('SIGKILL');
    }
  }

  /** Resolves once the process is gone. */
  waitExit(): Promise<void> {
    return new Promise((resolve) => this.onExit(() => resolve()));
  }
}

// One render process (render-process.js) as the pool sees it: started under its heap cap and the
// kernel's memory bound, spoken to over Node's IPC channel, watched for resident memory while it
// renders, and killed with SIGKILL (a synchronous engine cannot be stopped any other way). Why it
// ended is read from how it ended: V8's fatal out-of-memory report on its stderr, a refused
// allocation, or our own kill past the memory cap all mean "the diagram needs more memory".
import { type ChildProcess, spawn } from 'node:child_process';
import { boundedArgv, cpuMillis, memoryOf } from '../../../infra/process/bounds.ts';

const ENTRY = new URL('./render-process.js', import.meta.url);
/** How often a busy process's memory is read. */
const WATCH_MS = 200;
/** Committed memory this close to the kernel's bound means an allocation is being refused. */
const AT_BOUND = 16 * 1024 * 1024;
/**
 * glibc's allocator settings of deploy/ (docs/operations.md), given to every render process whatever
 * the server was started with (the server's own MALLOC_* win where it has them): the process gets
 * only the environment below, so it never had them. Loading the engines (Mermaid's ELK, D2's
 * 22 MB module) leaves glibc's heap holding tens of MiB the compilers freed, and threads each
 * taking an arena. Measured on Node 26, every engine loaded in one process and one sample each
 * rendered: 223-236 MiB anonymous memory by default, 183-185 with these (a 32 KiB threshold 178);
 * 20 renders of each sample took the same CPU within the noise (docs/diagrams.md).
 */
export const ALLOCATOR: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
};
/** V8's and Node's words for running out of memory (the last lines of a fatal error). */
const OOM =
  /out of memory|heap limit|allocation failed|invalid (?:typed )?array length|ENOMEM|Cannot allocate/i;

export interface ChildOptions {
  /** V8 old-generation cap (MiB). */
  heapMb: number;
  /**
   * Memory one render may add to the process (bytes): committed memory past what its engines hold
   * (RLIMIT_DATA, which the process sets on itself as engines load) and resident memory past what
   * it had when the render started (read from /proc while it renders).
   */
  memoryBytes: number;
  /** Largest answer (bytes). */
  maxOutputBytes: number;
  /** CPU priority (nice). */
  nice: number;
  /** The process collects its heap once it has been idle this long (ms; 0 = never; render-process.js). */
  collectIdleMs: number;
}

export type ChildMessage =
  | { ready: true }
  | { seq: number; warmed: true }
  | { collected: { before: number; after: number; cpuMs: number } }
  | { seq: number; started: true; rss?: number; limit?: number }
  | { seq: number; reply: unknown };

/** How a process ended: killed by us (timeout, memory, close) or by itself (crash, out of memory). */
export interface ChildEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** It ran out of memory (V8's limit, the kernel's, or our resident cap). */
  memory: boolean;
  /** The pool killed it (timeout, idle, close): not a crash. */
  killed: boolean;
}

export class RenderChild {
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  private stderrTail = '';
  private overMemory = false;
  private killedByUs = false;
  private watch: NodeJS.Timeout | null = null;
  private readonly o: ChildOptions;
  ended: ChildEnd | null = null;
  /** It said it is ready (its IPC listener is up). */
  started = false;

  constructor(o: ChildOptions, onMessage: (m: ChildMessage) => void, onEnd: (e: ChildEnd) => void) {
    this.o = o;
    // Only what the engines need: the server's environment (tokens, keys) stays out of reach of
    // the code that runs a stranger's diagram.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      LANG: 'C.UTF-8',
      DEVUTIL_RENDER_MAX_OUTPUT: String(o.maxOutputBytes),
      DEVUTIL_RENDER_MEMORY: String(o.memoryBytes),
      DEVUTIL_RENDER_COLLECT_IDLE_MS: String(o.collectIdleMs),
      ...ALLOCATOR,
    };
    for (const k of ['HOME', 'TMPDIR', 'NODE_COMPILE_CACHE']) if (process.env[k]) env[k] = process.env[k];
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith('MALLOC_') && v) env[k] = v;
    const argv = boundedArgv(
      [
        process.execPath,
        `--max-old-space-size=${o.heapMb}`,
        '--max-semi-space-size=4',
        // V8's baseline WebAssembly code only: D2's 22 MB Go module is otherwise re-optimised on
        // background threads for a minute or more after it loads, at several hundred MiB (docs/diagrams.md).
        '--liftoff-only',
        ENTRY.pathname,
      ],
      { nice: o.nice, dieWithParent: true },
    );
    this.proc = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
      env,
    });
    this.proc.stderr?.on('data', (b: Buffer) => {
      this.stderrTail = (this.stderrTail + b.toString('utf8')).slice(-4096);
    });
    this.ready = new Promise((resolve, reject) => {
      const onReady = (m: ChildMessage) => {
        if ('ready' in m) {
          this.started = true;
          resolve();
        }
      };
      this.proc.on('message', onReady);
      this.proc.once('exit', () => reject(new Error('the render process exited while starting')));
    });
    this.ready.catch(() => {});
    this.proc.on('message', (m: ChildMessage) => onMessage(m));
    // A failed spawn or send ends in 'exit' too (or only 'error' when it never started).
    this.proc.on('error', () => {
      if (this.proc.exitCode === null && this.proc.signalCode === null) this.kill();
    });
    this.proc.on('exit', (code, signal) => {
      this.unwatch();
      this.ended = {
        code,
        signal,
        memory: this.overMemory || (!this.killedByUs && OOM.test(this.stderrTail)),
        killed: this.killedByUs && !this.overMemory,
      };
      onEnd(this.ended);
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** The last lines it wrote to stderr (an engine's warning, V8's fatal error). */
  get stderr(): string {
    return this.stderrTail;
  }

  send(msg: unknown): boolean {
    if (this.ended || !this.proc.connected) return false;
    try {
      this.proc.send(msg as never);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Reads its memory while it renders: once the render has added more than the cap to what was
   * resident at the start (`baseRss`, its own figure), or its committed memory is at the kernel's
   * bound (`limit`, which it set on itself), it is killed as out of memory.
   */
  watchMemory(baseRss: number | undefined, limit: number | undefined): void {
    if (this.watch || !this.proc.pid) return;
    const pid = this.proc.pid;
    const cap = (baseRss ?? memoryOf(pid)?.rss ?? 0) + this.o.memoryBytes;
    const full = limit ? limit - AT_BOUND : Number.POSITIVE_INFINITY;
    this.watch = setInterval(() => {
      const m = memoryOf(pid);
      if (m && (m.rss > cap || m.data >= full)) {
        this.overMemory = true;
        this.kill();
      }
    }, WATCH_MS);
    this.watch.unref();
  }

  /** CPU time it has used so far (ms), or undefined. */
  cpu(): number | undefined {
    return this.proc.pid ? cpuMillis(this.proc.pid) : undefined;
  }

  unwatch(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = null;
  }

  kill(): void {
    this.killedByUs = true;
    this.unwatch();
    try {
      this.proc.kill('SIGKILL');
    } catch {}
  }
}

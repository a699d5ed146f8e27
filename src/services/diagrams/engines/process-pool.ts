// A warm pool of render processes (render-child.ts) for the JavaScript and WebAssembly engines. One
// process hosts every engine it has been asked for, renders one diagram at a time (the engines are
// synchronous) and is killed at the render deadline or past its memory; the server process never
// runs a stranger's diagram itself, so nothing a diagram does can end it. Engines load on first use
// and every new process loads the most recently used ones. A spare, warm process is kept beside the busy ones,
// so a process killed under a bomb is replaced by one that is already warm, not by a cold start in
// front of the next small diagram. Processes idle for idleMs exit, giving their memory back.
// Admission (fair queue, client share, quarantine) is the caller's; this dispatches and replaces.
import { type ChildEnd, type ChildMessage, RenderChild } from './render-child.ts';
import {
  RenderCrashed,
  type RenderJob,
  RenderPoolClosed,
  type RenderReply,
  RenderTimeout,
} from './render-job.ts';

/**
 * Engines a new process loads before it is asked for them: the most recently used. Loading costs
 * CPU (0.1-1.1 s per engine on the 2-core development machine, Node 20 about twice Node 26) and
 * memory in every new process, and a process killed under a bomb is replaced by one that pays it
 * again; an engine past these loads on its first diagram (outside the render deadline).
 */
const PRELOAD = 4;

export type PoolEvent = 'spawn' | 'exit' | 'timeout' | 'crash' | 'cold' | 'collect';

/**
 * A render process idle this long collects its JavaScript heap once (src/infra/process/idle-gc.ts,
 * the server's own idle collection): the garbage of its renders and engine loads stays otherwise
 * until the process exits (DEVUTIL_DIAGRAMS_RENDER_THREAD_IDLE_SEC, 5 minutes by default), since an
 * idle heap is never collected. Measured on Node 26 (docs/diagrams.md): every engine loaded and 20
 * renders of each sample, 89-101 to 66-72 MiB of heap and 25-58 MiB less anonymous memory, for
 * 170-280 ms of CPU once per idle spell.
 */
const COLLECT_IDLE_MS = 10_000;

export interface ProcessPoolOptions {
  /** Renders at once. */
  size: number;
  /** Warm idle processes kept beside the busy ones (at most size + spares processes). */
  spares: number;
  timeoutMs: number;
  /** How long a process may take to start and load an engine before its first render (default 60 s). */
  loadTimeoutMs?: number;
  /** V8 old-generation cap per process (MiB). */
  heapMb: number;
  /** Memory one render may add to its process (bytes; render-child.ts). */
  memoryBytes: number;
  /** Largest answer (bytes). */
  maxOutputBytes: number;
  /** A process with nothing to do for this long exits (0 = never). */
  idleMs: number;
  /** Their CPU priority (nice; render-job.ts). */
  nice: number;
  /** A process idle this long collects its heap once (ms; default COLLECT_IDLE_MS; 0 = never). */
  collectIdleMs?: number;
  /**
   * Engines a new process may load ahead of use once the pool has used them (default: every one);
   * it loads the PRELOAD most recently used of them.
   */
  preload?: (engine: string) => boolean;
  onEvent?: (event: PoolEvent, detail: Record<string, unknown>) => void;
}

interface Pending {
  job: RenderJob;
  resolve: (r: RenderReply) => void;
  reject: (e: Error) => void;
}

interface Slot {
  child: RenderChild;
  busy: Pending | null;
  /** Engines this process has loaded (or is loading). */
  engines: Set<string>;
  /** Started, IPC up and the engines in use loaded. */
  warm: boolean;
  timer: NodeJS.Timeout | null;
  idle: NodeJS.Timeout | null;
  seq: number;
  /** Its CPU time when the current render started (ms). */
  cpuAtStart: number | undefined;
}

export class ProcessPool {
  private readonly o: ProcessPoolOptions;
  private readonly slots = new Set<Slot>();
  private readonly waiting: Pending[] = [];
  private closed = false;
  /** Engines asked for since the pool started. */
  /** Engines asked for since the pool started, least recently used first. */
  private readonly used = new Set<string>();
  /** Processes started since the pool was made (tests and /metrics look at replacements). */
  spawned = 0;
  /** The last process started ended before it was ready. */
  private startFailed = false;
  /** When a job last started or ended (ms): spares are kept only while the pool is in use. */
  private lastUse = 0;

  constructor(o: ProcessPoolOptions) {
    this.o = o;
  }

  stats(): { processes: number; busy: number; queued: number } {
    let busy = 0;
    for (const s of this.slots) if (s.busy) busy++;
    return { processes: this.slots.size, busy, queued: this.waiting.length };
  }

  /** Pids of the live processes (tests, metrics). */
  pids(): number[] {
    return [...this.slots].map((s) => s.child.pid ?? 0).filter(Boolean);
  }

  run(job: RenderJob): Promise<RenderReply> {
    if (this.closed) return Promise.reject(new RenderPoolClosed('the diagram renderer is shutting down'));
    return new Promise<RenderReply>((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.dispatch();
    });
  }

  private busyCount(): number {
    let n = 0;
    for (const s of this.slots) if (s.busy) n++;
    return n;
  }

  /**
   * Hands waiting jobs to processes, warmest first: one that has the job's engine loaded, then any
   * warm one, then one still warming up (it is further along than a new one), then a new process.
   */
  private dispatch(): void {
    while (this.waiting.length > 0 && this.busyCount() < this.o.size) {
      const next = this.waiting[0]!;
      let best: Slot | undefined;
      let rank = 0;
      for (const s of this.slots) {
        if (s.busy) continue;
        const r = s.warm ? (s.engines.has(next.job.engine) ? 3 : 2) : 1;
        if (r > rank) [best, rank] = [s, r];
      }
      if (!best) {
        if (this.slots.size >= this.o.size + this.o.spares) return;
        best = this.spawn();
        this.o.onEvent?.('cold', { engine: next.job.engine });
      }
      this.start(best, this.waiting.shift()!);
    }
    this.topUp();
  }

  /** Keeps `spares` idle processes beside the busy ones, once the pool has been used. */
  private topUp(): void {
    // After a process that could not even start, only jobs start new ones (a broken installation
    // would otherwise start processes in a loop).
    if (this.closed || this.used.size === 0 || this.startFailed) return;
    // An idle pool lets its processes go, the spare too: without this, each idle exit started a
    // new spare (with the recent engines preloaded) and the pool never gave its memory back.
    if (this.o.idleMs > 0 && Date.now() - this.lastUse >= this.o.idleMs) return;
    let idle = 0;
    for (const s of this.slots) if (!s.busy) idle++;
    while (idle < this.o.spares && this.slots.size < this.o.size + this.o.spares) {
      this.spawn();
      idle++;
    }
  }

  private spawn(): Slot {
    const warmList = [...this.used].slice(-PRELOAD).reverse();
    const slot: Slot = {
      child: undefined as unknown as RenderChild,
      busy: null,
      engines: new Set(warmList),
      warm: false,
      timer: null,
      idle: null,
      seq: 0,
      cpuAtStart: undefined,
    };
    slot.child = new RenderChild(
      {
        heapMb: this.o.heapMb,
        memoryBytes: this.o.memoryBytes,
        maxOutputBytes: this.o.maxOutputBytes,
        nice: this.o.nice,
        collectIdleMs: this.o.collectIdleMs ?? COLLECT_IDLE_MS,
      },
      (m) => this.onMessage(slot, m),
      (e) => this.onEnd(slot, e),
    );
    this.slots.add(slot);
    this.spawned++;
    this.o.onEvent?.('spawn', { pid: slot.child.pid });
    // Nothing is sent before the process listens (a message that arrives earlier is lost). Then
    // the engines in use are loaded before any job needs them; a job given to the process
    // meanwhile waits for the same loads (the process imports each module once).
    slot.child.ready.then(
      () => {
        this.startFailed = false;
        if (warmList.length === 0) this.warmed(slot);
        else slot.child.send({ seq: 0, warm: warmList });
      },
      () => {},
    );
    this.armIdle(slot);
    return slot;
  }

  private warmed(slot: Slot): void {
    if (slot.warm || !this.slots.has(slot)) return;
    slot.warm = true;
    this.dispatch();
  }

  private onMessage(slot: Slot, msg: ChildMessage): void {
    if ('ready' in msg) return;
    if ('collected' in msg) {
      this.o.onEvent?.('collect', { pid: slot.child.pid, ...msg.collected });
      return;
    }
    if ('warmed' in msg) {
      this.warmed(slot);
      return;
    }
    if (msg.seq !== slot.seq || !slot.busy) return;
    if ('started' in msg) {
      // The engine is loaded: the render's own deadline starts now.
      this.arm(slot, this.o.timeoutMs);
      slot.cpuAtStart = slot.child.cpu();
      slot.child.watchMemory(msg.rss, msg.limit);
      return;
    }
    const p = slot.busy;
    this.settle(slot);
    this.lastUse = Date.now();
    slot.warm = true;
    const reply = msg.reply as RenderReply & { retire?: boolean; memory?: boolean };
    if (reply.retire) {
      // Its WebAssembly engine aborted (render-process.js): replaced, never asked again.
      this.slots.delete(slot);
      this.o.onEvent?.(reply.memory ? 'crash' : 'exit', {
        pid: slot.child.pid,
        retired: true,
        memory: !!reply.memory,
      });
      slot.child.kill();
      if (reply.memory)
        p.reject(new RenderCrashed('the diagram needs more memory than a render may use', true));
      else p.resolve(reply);
    } else {
      p.resolve(reply);
      this.armIdle(slot);
    }
    this.dispatch();
  }

  private onEnd(slot: Slot, e: ChildEnd): void {
    const live = this.slots.delete(slot);
    if (!slot.child.started && !e.killed) this.startFailed = true;
    if (slot.idle) clearTimeout(slot.idle);
    const p = slot.busy;
    this.settle(slot);
    if (p) {
      // V8's or the engine's last words (a fatal error's first line), for the log.
      const why = slot.child.stderr.split('\n').find((l) => /fatal|error|memory/i.test(l));
      this.o.onEvent?.('crash', {
        pid: slot.child.pid,
        code: e.code,
        signal: e.signal,
        memory: e.memory,
        ...(why ? { why: why.trim().slice(0, 300) } : {}),
      });
      p.reject(
        new RenderCrashed(
          e.memory
            ? 'the diagram needs more memory than a render may use'
            : 'the diagram engine crashed on this diagram',
          e.memory,
        ),
      );
    } else if (live) this.o.onEvent?.('exit', { pid: slot.child.pid, code: e.code, signal: e.signal });
    if (this.closed) return;
    this.dispatch();
  }

  private start(slot: Slot, p: Pending): void {
    slot.cpuAtStart = undefined;
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = null;
    slot.busy = p;
    this.lastUse = Date.now();
    slot.engines.add(p.job.engine);
    if (this.o.preload?.(p.job.engine) ?? true) {
      this.used.delete(p.job.engine);
      this.used.add(p.job.engine);
    }
    slot.seq++;
    // Until the process says the engine is loaded, the deadline is the (longer) load deadline.
    this.arm(slot, Math.max(this.o.loadTimeoutMs ?? 60_000, this.o.timeoutMs));
    const msg = { seq: slot.seq, job: p.job };
    slot.child.ready.then(
      () => {
        if (slot.busy === p && !slot.child.send(msg)) slot.child.kill();
      },
      () => {},
    );
  }

  private arm(slot: Slot, ms: number): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      const p = slot.busy;
      if (!p) return;
      this.settle(slot);
      this.slots.delete(slot);
      const now = slot.child.cpu();
      const cpuMs = now !== undefined && slot.cpuAtStart !== undefined ? now - slot.cpuAtStart : undefined;
      this.o.onEvent?.('timeout', { pid: slot.child.pid, engine: p.job.engine, cpuMs });
      slot.child.kill();
      p.reject(new RenderTimeout(`no result within ${ms} ms`, cpuMs));
      this.dispatch();
    }, ms);
  }

  private settle(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    slot.busy = null;
    slot.child.unwatch();
  }

  private armIdle(slot: Slot, ms = this.o.idleMs): void {
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = null;
    if (this.o.idleMs <= 0 || slot.busy) return;
    slot.idle = setTimeout(() => {
      if (slot.busy || !this.slots.has(slot)) return;
      // A spare waits for the pool's idle time, not its own: it stays while another process renders.
      const left = this.busyCount() > 0 ? this.o.idleMs : this.lastUse + this.o.idleMs - Date.now();
      if (left > 0) {
        this.armIdle(slot, left);
        return;
      }
      this.slots.delete(slot);
      this.o.onEvent?.('exit', { pid: slot.child.pid, idle: true });
      slot.child.kill();
    }, ms);
    slot.idle.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.waiting.splice(0))
      p.reject(new RenderPoolClosed('the diagram renderer is shutting down'));
    const all = [...this.slots];
    this.slots.clear();
    await Promise.all(
      all.map((s) => {
        if (s.idle) clearTimeout(s.idle);
        const p = s.busy;
        this.settle(s);
        p?.reject(new RenderPoolClosed('the diagram renderer is shutting down'));
        if (s.child.ended) return undefined;
        const gone = new Promise<void>((r) => s.child.proc.once('exit', () => r()));
        s.child.kill();
        return gone;
      }),
    );
  }
}

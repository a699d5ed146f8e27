// Worker threads for the JavaScript and WebAssembly diagram engines: a layout that runs away (a
// huge graph, a pathological Mermaid or Vega spec) must never block the event loop, and a render
// past its deadline is stopped by terminating its thread, which a synchronous engine cannot do for
// itself. Each thread runs one render at a time (the engines are synchronous), loads engines on
// first use, has a heap cap (an allocation bomb ends that thread, not the server), and retires when
// idle so the memory of rarely used engines goes back. Admission (fair queue, client share) is the
// caller's; this only dispatches to free threads and replaces the ones that die.
import { Worker } from 'node:worker_threads';

/** What a thread is asked: render `source` with engine `engine` (a module in this folder). */
export interface ThreadJob {
  engine: string;
  source: string;
  format: string;
  options: Record<string, string>;
}

/** What a thread answers (structured clone). */
export type ThreadReply =
  | { ok: true; body: Uint8Array | string }
  | { ok: false; kind: 'syntax' | 'unsupported' | 'failed'; message: string; line?: number };

export class ThreadTimeout extends Error {}
/** The thread died under the render: out of memory, or an engine crash. */
export class ThreadCrashed extends Error {}
export class ThreadPoolClosed extends Error {}

export interface ThreadPoolOptions {
  size: number;
  timeoutMs: number;
  /** Engines a new thread loads ahead of use once the pool has used them (default: every one). */
  preload?: (engine: string) => boolean;
  /** How long a thread may take to load an engine before its first render (default 60 s). */
  loadTimeoutMs?: number;
  /** V8 old-generation cap per thread (MiB). */
  heapMb: number;
  /** A thread with nothing to do for this long exits (0 = never). */
  idleMs: number;
  onEvent?: (event: 'spawn' | 'exit' | 'timeout' | 'crash', detail: Record<string, unknown>) => void;
}

interface Pending {
  job: ThreadJob;
  resolve: (r: ThreadReply) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Pending | null;
  /** Engines this thread has loaded (or is loading): jobs go to a thread that has theirs. */
  engines: Set<string>;
  /** Loading engines ahead of use (a replacement for a thread that was ended). */
  warming: boolean;
  timer: NodeJS.Timeout | null;
  idle: NodeJS.Timeout | null;
  seq: number;
}

const ENTRY = new URL('./thread.js', import.meta.url);

export class ThreadPool {
  private readonly o: ThreadPoolOptions;
  private readonly slots = new Set<Slot>();
  private readonly waiting: Pending[] = [];
  private closed = false;
  /** Engines asked for since the pool started. */
  private readonly used = new Set<string>();
  /** Threads started since the pool was made (tests and /metrics look at replacements). */
  spawned = 0;

  constructor(o: ThreadPoolOptions) {
    this.o = o;
  }

  stats(): { threads: number; busy: number; queued: number } {
    let busy = 0;
    for (const s of this.slots) if (s.busy) busy++;
    return { threads: this.slots.size, busy, queued: this.waiting.length };
  }

  /** Thread ids of the live threads (tests). */
  threadIds(): number[] {
    return [...this.slots].map((s) => s.worker.threadId);
  }

  run(job: ThreadJob): Promise<ThreadReply> {
    if (this.closed) return Promise.reject(new ThreadPoolClosed('the diagram renderer is shutting down'));
    return new Promise<ThreadReply>((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Hands waiting jobs to threads: one that has the job's engine loaded first, then a new thread
   * while the pool is below its size, then any idle one. A cold thread costs a second or more of
   * loading, so a small render should not land on the replacement of a thread a bomb just ended.
   */
  private dispatch(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      let warm: Slot | undefined;
      let idle: Slot | undefined;
      for (const s of this.slots) {
        if (s.busy) continue;
        if (!s.warming && s.engines.has(next.job.engine)) warm = s;
        else if (!idle || (idle.warming && !s.warming)) idle = s;
      }
      const slot = warm ?? (this.slots.size < this.o.size ? this.spawn() : idle);
      if (!slot) return;
      this.start(slot, this.waiting.shift()!);
    }
  }

  /** A thread that was ended is replaced at once, and the replacement loads the engines in use. */
  private replace(): void {
    if (!this.closed && this.slots.size < this.o.size) this.spawn();
  }

  private spawn(): Slot {
    const worker = new Worker(ENTRY, {
      resourceLimits: { maxOldGenerationSizeMb: this.o.heapMb, maxYoungGenerationSizeMb: 32 },
      stdout: false,
      stderr: false,
    });
    const slot: Slot = {
      worker,
      busy: null,
      engines: new Set(),
      warming: false,
      timer: null,
      idle: null,
      seq: 0,
    };
    this.slots.add(slot);
    this.spawned++;
    // Every thread loads the engines the pool has used so far, so any thread serves any of them warm.
    if (this.used.size > 0) {
      slot.warming = true;
      for (const e of this.used) slot.engines.add(e);
      worker.postMessage({ seq: 0, warm: [...this.used] });
    }
    this.o.onEvent?.('spawn', { threadId: worker.threadId });
    worker.on('message', (msg: { seq: number; started?: boolean; warmed?: boolean; reply?: ThreadReply }) => {
      if (msg.warmed) {
        slot.warming = false;
        this.dispatch();
        return;
      }
      if (msg.seq !== slot.seq || !slot.busy) return;
      if (msg.started) {
        // The engine is loaded: the render's own deadline starts now.
        this.arm(slot, this.o.timeoutMs);
        return;
      }
      if (!msg.reply) return;
      const p = slot.busy;
      this.settle(slot);
      p.resolve(msg.reply);
      this.dispatch();
      this.armIdle(slot);
    });
    let why: Error | null = null;
    worker.on('error', (err) => {
      why = err;
    });
    worker.on('exit', (code) => {
      this.slots.delete(slot);
      if (slot.idle) clearTimeout(slot.idle);
      const p = slot.busy;
      if (p) {
        this.settle(slot);
        const oom = (why as { code?: string } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
        this.o.onEvent?.('crash', { threadId: worker.threadId, code, oom });
        p.reject(
          new ThreadCrashed(
            oom
              ? 'the diagram needs more memory than a render may use'
              : 'the diagram engine crashed on this diagram',
          ),
        );
      } else this.o.onEvent?.('exit', { threadId: worker.threadId, code });
      if (!this.closed) this.dispatch();
    });
    return slot;
  }

  private start(slot: Slot, p: Pending): void {
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = null;
    slot.busy = p;
    slot.engines.add(p.job.engine);
    if (this.o.preload?.(p.job.engine) ?? true) this.used.add(p.job.engine);
    slot.seq++;
    // Until the thread says the engine is loaded, the deadline is the (longer) load deadline.
    this.arm(slot, Math.max(this.o.loadTimeoutMs ?? 60_000, this.o.timeoutMs));
    slot.worker.postMessage({ seq: slot.seq, job: p.job });
  }

  private arm(slot: Slot, ms: number): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      // The only way to stop a synchronous layout: end its thread. Its replacement starts on demand.
      const job = slot.busy;
      if (!job) return;
      this.settle(slot);
      this.slots.delete(slot);
      this.o.onEvent?.('timeout', { threadId: slot.worker.threadId, engine: job.job.engine });
      void slot.worker.terminate();
      job.reject(new ThreadTimeout(`no result within ${ms} ms`));
      this.replace();
      this.dispatch();
    }, ms);
  }

  private settle(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    slot.busy = null;
  }

  private armIdle(slot: Slot): void {
    if (this.o.idleMs <= 0 || slot.busy) return;
    slot.idle = setTimeout(() => {
      if (slot.busy || !this.slots.has(slot)) return;
      this.slots.delete(slot);
      void slot.worker.terminate();
    }, this.o.idleMs);
    slot.idle.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.waiting.splice(0))
      p.reject(new ThreadPoolClosed('the diagram renderer is shutting down'));
    const all = [...this.slots];
    this.slots.clear();
    for (const s of all) {
      if (s.idle) clearTimeout(s.idle);
      const p = s.busy;
      this.settle(s);
      p?.reject(new ThreadPoolClosed('the diagram renderer is shutting down'));
    }
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}

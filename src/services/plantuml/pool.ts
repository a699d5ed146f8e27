// A pool of warm JVM workers, each running up to `threads` renders at once. A render past its
// deadline kills its worker (the other renders on it are retried on a fresh one); a dead worker is
// replaced on demand. Who gets a thread, and who is refused, is decided before this pool by the
// engine's fair queue (infra/limits/fair-queue.ts), so the hand-off queue here holds at most
// size x threads renders waiting for a worker to come up.
import type { WorkerReply, WorkerRequest } from './protocol.ts';
import type { JavaWorker } from './worker.ts';

export class RenderTimeout extends Error {}
export class PoolClosed extends Error {}
export class WorkerCrashed extends Error {}

export interface PoolOptions {
  size: number;
  /** Renders one worker runs at once. */
  threads: number;
  timeoutMs: number;
  /** Starts a new worker process. */
  spawn(): JavaWorker;
  /**
   * A worker died before its hello: true when the launcher removed the cause (an unusable
   * class-data archive) and a new start is worth it at once.
   */
  retryStart?(w: JavaWorker): boolean;
  /** Called with the hello of every worker that came up. */
  onHello?(hello: WorkerReply): void;
  onEvent?(event: 'spawn' | 'exit' | 'timeout' | 'crash', detail: Record<string, unknown>): void;
}

interface Job {
  req: WorkerRequest;
  resolve(r: WorkerReply): void;
  reject(e: Error): void;
  retried: boolean;
}

export class WorkerPool {
  private workers = new Set<JavaWorker>();
  /** Workers that said hello, with the tick of their last dispatch. */
  private ready = new Map<JavaWorker, number>();
  private queue: Job[] = [];
  private tick = 0;
  private closed = false;
  /** warm() was called: keep starting workers, one at a time, up to the pool size. */
  private warming = false;

  private readonly o: PoolOptions;
  constructor(o: PoolOptions) {
    this.o = o;
  }

  stats(): { workers: number; busy: number; idle: number; queued: number } {
    let busy = 0;
    let idle = 0;
    for (const w of this.ready.keys()) {
      busy += w.inflight;
      if (w.inflight === 0) idle++;
    }
    return { workers: this.workers.size, busy, idle, queued: this.queue.length };
  }

  pids(): number[] {
    return [...this.workers].flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
  }

  /**
   * Starts workers up to the pool size, one after another: each once the one before it said hello.
   * JVMs starting side by side share the cores (and those of the Node process starting beside
   * them), so the first worker, the one that answers the first diagram, would come up later.
   * Work that arrives meanwhile still starts more at once (pump).
   */
  warm(): void {
    this.warming = true;
    const starting = this.workers.size - this.ready.size;
    if (!this.closed && starting === 0 && this.workers.size < this.o.size) this.startWorker();
  }

  run(req: WorkerRequest): Promise<WorkerReply> {
    if (this.closed) return Promise.reject(new PoolClosed('renderer is shutting down'));
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject, retried: false });
      this.pump();
    });
  }

  private startWorker(): void {
    const w = this.o.spawn();
    this.workers.add(w);
    this.o.onEvent?.('spawn', { pid: w.pid });
    w.onExit((e) => {
      this.workers.delete(w);
      this.ready.delete(w);
      this.o.onEvent?.('exit', { pid: w.pid, code: e.code, signal: e.signal });
      if (!this.closed) this.pump();
    });
    w.ready.then(
      (hello) => {
        this.o.onHello?.(hello);
        if (!w.alive || this.closed) return;
        this.ready.set(w, 0);
        this.pump();
        if (this.warming) this.warm();
      },
      () => {
        if (!this.closed && this.o.retryStart?.(w)) {
          this.warm();
          return;
        }
        // Failing to start: fail the oldest waiter rather than spawn in a loop.
        const job = this.queue.shift();
        job?.reject(new WorkerCrashed('the PlantUML engine failed to start'));
      },
    );
  }

  /**
   * The least loaded worker with a free thread; among equals the most recently used, so light
   * traffic stays on the JVM with the hottest JIT and engine caches.
   */
  private pick(): JavaWorker | null {
    let best: JavaWorker | null = null;
    let bestTick = -1;
    for (const [w, tick] of this.ready) {
      if (w.inflight >= this.o.threads) continue;
      if (!best || w.inflight < best.inflight || (w.inflight === best.inflight && tick > bestTick)) {
        best = w;
        bestTick = tick;
      }
    }
    return best;
  }

  private pump(): void {
    while (!this.closed && this.queue.length > 0) {
      const w = this.pick();
      if (!w) {
        const starting = this.workers.size - this.ready.size;
        if (this.workers.size < this.o.size && starting * this.o.threads < this.queue.length) {
          this.startWorker();
          continue;
        }
        return;
      }
      this.dispatch(w, this.queue.shift()!);
    }
  }

  private dispatch(w: JavaWorker, job: Job): void {
    this.ready.set(w, ++this.tick);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.o.onEvent?.('timeout', { pid: w.pid, timeoutMs: this.o.timeoutMs });
      w.kill();
    }, this.o.timeoutMs);
    w.request(job.req).then(
      (reply) => {
        clearTimeout(timer);
        job.resolve(reply);
        this.pump();
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (timedOut) {
          job.reject(new RenderTimeout(`render took longer than ${this.o.timeoutMs} ms`));
        } else if (this.closed) {
          job.reject(new PoolClosed('renderer is shutting down'));
        } else if (!job.retried) {
          // The worker died under this render (killed from outside, or for another render's
          // timeout): try once more on a fresh worker.
          this.o.onEvent?.('crash', { pid: w.pid, error: String(err) });
          job.retried = true;
          this.queue.unshift(job);
        } else {
          job.reject(new WorkerCrashed('the PlantUML engine crashed twice on this diagram'));
        }
        this.pump();
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new PoolClosed('renderer is shutting down'));
    const all = [...this.workers];
    for (const w of all) w.kill();
    await Promise.all(all.map((w) => w.waitExit()));
  }
}

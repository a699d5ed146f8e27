// A pool of warm JVM workers behind a bounded FIFO queue. A render past its deadline kills its
// worker; a dead worker is replaced on demand; a full queue is refused (the route answers 503).
import type { WorkerReply, WorkerRequest } from './protocol.ts';
import type { JavaWorker } from './worker.ts';

export class QueueFull extends Error {}
export class RenderTimeout extends Error {}
export class PoolClosed extends Error {}
export class WorkerCrashed extends Error {}

export interface PoolOptions {
  size: number;
  queueSize: number;
  timeoutMs: number;
  /** Starts a new worker process. */
  spawn(): JavaWorker;
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
  private idle: JavaWorker[] = [];
  private queue: Job[] = [];
  private busy = 0;
  private closed = false;

  constructor(private readonly o: PoolOptions) {}

  stats(): { workers: number; busy: number; idle: number; queued: number } {
    return { workers: this.workers.size, busy: this.busy, idle: this.idle.length, queued: this.queue.length };
  }

  pids(): number[] {
    return [...this.workers].flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
  }

  /** Starts workers up to the pool size without waiting for them. */
  warm(): void {
    while (!this.closed && this.workers.size < this.o.size) this.startWorker();
  }

  run(req: WorkerRequest): Promise<WorkerReply> {
    if (this.closed) return Promise.reject(new PoolClosed('renderer is shutting down'));
    const waiting = this.queue.length;
    const capacity = this.idle.length + (this.o.size - this.workers.size);
    if (waiting >= this.o.queueSize + capacity) return Promise.reject(new QueueFull('render queue is full'));
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
      this.idle = this.idle.filter((x) => x !== w);
      this.o.onEvent?.('exit', { pid: w.pid, code: e.code, signal: e.signal });
      if (!this.closed) this.pump();
    });
    w.ready.then(
      (hello) => {
        this.o.onHello?.(hello);
        if (!w.alive) return;
        this.idle.push(w);
        this.pump();
      },
      () => {
        // Failing to start: fail the oldest waiter rather than spawn in a loop.
        const job = this.queue.shift();
        job?.reject(new WorkerCrashed('the PlantUML engine failed to start'));
      },
    );
  }

  private pump(): void {
    while (!this.closed && this.queue.length > 0) {
      // LIFO: the most recently used worker has the hottest JIT and engine caches, so light
      // traffic stays on one warm JVM and the others only take the overflow.
      const w = this.idle.pop();
      if (!w) {
        const starting = this.workers.size - this.busy;
        if (this.workers.size < this.o.size && starting < this.queue.length) {
          this.startWorker();
          continue;
        }
        return;
      }
      const job = this.queue.shift()!;
      this.dispatch(w, job);
    }
  }

  private dispatch(w: JavaWorker, job: Job): void {
    this.busy++;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.o.onEvent?.('timeout', { pid: w.pid, timeoutMs: this.o.timeoutMs });
      w.kill();
    }, this.o.timeoutMs);
    w.request(job.req).then(
      (reply) => {
        clearTimeout(timer);
        this.busy--;
        if (w.alive && !this.closed) this.idle.push(w);
        job.resolve(reply);
        this.pump();
      },
      (err: unknown) => {
        clearTimeout(timer);
        this.busy--;
        if (timedOut) {
          job.reject(new RenderTimeout(`render took longer than ${this.o.timeoutMs} ms`));
        } else if (this.closed) {
          job.reject(new PoolClosed('renderer is shutting down'));
        } else if (!job.retried) {
          // Killed from outside mid-request: try once more on a fresh worker.
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

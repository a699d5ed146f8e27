// A pool of warm JVM workers, each running up to `threads` renders at once. A render past its
// deadline is answered at once and abandoned (its thread runs out at the lowest priority inside the
// JVM, worker.ts), so the other renders on that JVM go on. A worker is replaced without anyone
// waiting for a JVM start when it carries too many abandoned renders or ran out of memory: a
// successor starts and warms up while the old worker keeps serving, then takes over, and the old one
// is stopped once its own renders are answered. Only a worker that stops answering (a ping
// unanswered) is killed at once, its renders retried on a fresh one, and so is one whose class state
// broke (a render failed with a LinkageError), the render that found it tried once more on another
// (at most MAX_BROKEN such kills a minute). Who gets a thread, and who is
// refused, is decided before this pool by the engine's fair queue (infra/limits/fair-queue.ts), so
// the hand-off queue here holds at most size x threads renders waiting for a worker to come up.
import type { WorkerReply, WorkerRequest } from './protocol.ts';
import type { JavaWorker } from './worker.ts';

export class RenderTimeout extends Error {}
export class PoolClosed extends Error {}
export class WorkerCrashed extends Error {}

export type PoolEvent =
  | 'spawn'
  | 'exit'
  | 'timeout'
  | 'crash'
  | 'retire'
  | 'unresponsive'
  | 'cold_wait'
  | 'broken';

export interface PoolOptions {
  size: number;
  /** Renders one worker runs at once. */
  threads: number;
  timeoutMs: number;
  /**
   * What a render past its deadline costs its worker: `abandon` (the default) lets the JVM go on
   * serving; `kill` ends the JVM and retries its other renders (the quarantine worker, which only
   * runs suspects' renders).
   */
  onTimeout?: 'abandon' | 'kill';
  /** The worker's heap: a render that ran out of memory after allocating a quarter of it caused it. */
  heapBytes?: number;
  /** The window within which at most `maxBroken` JVMs are killed for a broken class state (default a minute). */
  brokenWindowMs?: number;
  /** JVMs killed for a broken class state per window (default MAX_BROKEN). */
  maxBroken?: number;
  /** Stop the workers after this long without work (0 = keep them). */
  idleExitMs?: number;
  /** Starts a new worker process. */
  spawn(): JavaWorker;
  /**
   * A worker died before its hello: true when the launcher removed the cause (an unusable
   * class-data archive) and a new start is worth it at once.
   */
  retryStart?(w: JavaWorker): boolean;
  /** Called with the hello of every worker that came up. */
  onHello?(hello: WorkerReply): void;
  onEvent?(event: PoolEvent, detail: Record<string, unknown>): void;
}

interface Job {
  req: WorkerRequest;
  /** When it was queued (performance.now()). */
  queued: number;
  resolve(r: WorkerReply): void;
  reject(e: Error): void;
  retried: boolean;
}

/**
 * Abandoned renders a worker may carry before it is replaced. Each one holds its heap and a
 * low-priority thread until the engine returns (minutes for some layouts); a replacement costs a
 * JVM start (a few CPU seconds), paid while the old worker still serves.
 */
const MAX_ABANDONED = 4;

/**
 * JVMs killed for a broken class state (a LinkageError, worker.ts `brokenBy`) per window. Past it a
 * broken JVM keeps serving (its other classes still work) and its renders are not retried: an
 * environment that breaks every fresh JVM (a missing native library) or a stream of diagrams that
 * break them must not make the pool start JVMs in a loop.
 */
const MAX_BROKEN = 3;
const BROKEN_WINDOW_MS = 60_000;

export class WorkerPool {
  private workers = new Set<JavaWorker>();
  /** Workers that said hello, with the tick of their last dispatch. */
  private ready = new Map<JavaWorker, number>();
  /** When each worker said hello (performance.now()). */
  private upSince = new Map<JavaWorker, number>();
  /** Workers being replaced: no new work once a successor is warm; stopped when idle. */
  private retiring = new Set<JavaWorker>();
  private queue: Job[] = [];
  private tick = 0;
  private closed = false;
  /** warm() was called: keep starting workers, one at a time, up to the pool size. */
  private warming = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Workers found broken: true when killed for it, false when kept (MAX_BROKEN). */
  private brokenSeen = new WeakMap<JavaWorker, boolean>();
  /** When the kills for a broken class state within the window were (performance.now()). */
  private brokenKills: number[] = [];

  private readonly o: PoolOptions;
  constructor(o: PoolOptions) {
    this.o = o;
  }

  stats(): { workers: number; busy: number; idle: number; queued: number; abandoned: number } {
    let busy = 0;
    let idle = 0;
    let abandoned = 0;
    for (const w of this.ready.keys()) {
      busy += w.inflight;
      abandoned += w.abandoned;
      if (w.inflight === 0) idle++;
    }
    return { workers: this.workers.size, busy, idle, queued: this.queue.length, abandoned };
  }

  pids(): number[] {
    return [...this.workers].flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
  }

  /** Workers that count toward the pool size (started or starting, not being replaced). */
  private get serving(): number {
    return this.workers.size - this.retiring.size;
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
    if (!this.closed && starting === 0 && this.serving < this.o.size) this.startWorker();
  }

  run(req: WorkerRequest): Promise<WorkerReply> {
    if (this.closed) return Promise.reject(new PoolClosed('renderer is shutting down'));
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject, retried: false, queued: performance.now() });
      this.pump();
    });
  }

  private startWorker(): void {
    const w = this.o.spawn();
    this.workers.add(w);
    this.o.onEvent?.('spawn', { pid: w.pid });
    w.onChange = () => this.settle();
    w.onExit((e) => {
      this.workers.delete(w);
      this.ready.delete(w);
      this.upSince.delete(w);
      this.retiring.delete(w);
      this.o.onEvent?.('exit', { pid: w.pid, code: e.code, signal: e.signal });
      if (!this.closed) this.pump();
    });
    void w.warmed.then(() => {
      this.pump();
      this.settle();
    });
    w.ready.then(
      (hello) => {
        this.o.onHello?.(hello);
        if (!w.alive || this.closed) return;
        this.ready.set(w, 0);
        this.upSince.set(w, performance.now());
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
   * traffic stays on the JVM with the hottest JIT and engine caches. While a worker is being
   * replaced, its successor takes work once warm (before that, a render there would run on a
   * cold JIT) and the old worker only when the successor is full.
   */
  private pick(): JavaWorker | null {
    const replacing = [...this.retiring].some((w) => this.ready.has(w));
    let best: JavaWorker | null = null;
    let bestRank = 0;
    let bestTick = -1;
    for (const [w, tick] of this.ready) {
      if (w.inflight >= this.o.threads || this.brokenSeen.get(w)) continue;
      const rank = this.retiring.has(w) ? 1 : replacing && !w.warm ? -1 : 2;
      if (rank < 0) continue;
      if (
        !best ||
        rank > bestRank ||
        (rank === bestRank &&
          (w.inflight < best.inflight || (w.inflight === best.inflight && tick > bestTick)))
      ) {
        best = w;
        bestRank = rank;
        bestTick = tick;
      }
    }
    return best;
  }

  private pump(): void {
    // A worker being replaced needs its successor even when no work waits.
    if (!this.closed && this.retiring.size > 0 && this.serving < this.o.size) this.startWorker();
    while (!this.closed && this.queue.length > 0) {
      const w = this.pick();
      if (!w) {
        const starting = this.workers.size - this.ready.size;
        if (this.serving < this.o.size && starting * this.o.threads < this.queue.length) {
          this.startWorker();
          continue;
        }
        return;
      }
      this.dispatch(w, this.queue.shift()!);
    }
  }

  /** Replaces `w` without a wait: see the file comment. */
  private retire(w: JavaWorker, why: string): void {
    if (this.closed || !w.alive || this.retiring.has(w)) return;
    this.retiring.add(w);
    this.o.onEvent?.('retire', { pid: w.pid, why, abandoned: w.abandoned });
    this.pump();
    this.settle();
  }

  /**
   * Kills a worker whose class state is broken (its renders in flight are retried like a crash's)
   * unless MAX_BROKEN were killed within the window; a worker kept for that is killed once the
   * window has room. True when `w` is (being) killed for it.
   */
  private breakWorker(w: JavaWorker): boolean {
    const seen = this.brokenSeen.get(w);
    if (seen) return true;
    if (this.closed || !w.alive || w.brokenBy === null) return false;
    const now = performance.now();
    const windowMs = this.o.brokenWindowMs ?? BROKEN_WINDOW_MS;
    this.brokenKills = this.brokenKills.filter((t) => now - t < windowMs);
    const kill = this.brokenKills.length < (this.o.maxBroken ?? MAX_BROKEN);
    this.brokenSeen.set(w, kill);
    // Reported when found and when killed: a kept one is not reported again by each render it fails.
    if (seen === undefined || kill)
      this.o.onEvent?.('broken', { pid: w.pid, exception: w.brokenBy, killed: kill });
    if (!kill) return false;
    this.brokenKills.push(now);
    w.kill();
    return true;
  }

  /** Stops the retiring workers whose renders are answered, once a warm successor serves. */
  private settle(): void {
    for (const w of this.workers) if (w.brokenBy !== null) this.breakWorker(w);
    const successor = [...this.ready.keys()].some((w) => !this.retiring.has(w) && w.warm);
    for (const w of this.retiring) if (w.inflight === 0 && (successor || !this.ready.has(w))) w.kill();
    for (const w of this.ready.keys())
      if (w.abandoned > MAX_ABANDONED) this.retire(w, 'too many abandoned renders');
    if (this.o.idleExitMs && !this.idleTimer && this.queue.length === 0 && this.stats().busy === 0) {
      this.idleTimer = setTimeout(() => {
        this.idleTimer = null;
        if (this.queue.length === 0 && this.stats().busy === 0) for (const w of this.workers) w.kill();
      }, this.o.idleExitMs);
      this.idleTimer.unref();
    }
  }

  /** After a timeout: a JVM whose reader does not answer a ping for a whole render timeout is stuck. */
  private async probe(w: JavaWorker): Promise<void> {
    if (await w.ping(Math.max(5000, this.o.timeoutMs))) return;
    if (!w.alive || this.closed) return;
    this.o.onEvent?.('unresponsive', { pid: w.pid });
    w.kill();
  }

  private dispatch(w: JavaWorker, job: Job): void {
    this.ready.set(w, ++this.tick);
    // Counted so that operators (and the acceptance test) see renders that waited for a JVM start.
    if ((this.upSince.get(w) ?? 0) > job.queued) this.o.onEvent?.('cold_wait', { pid: w.pid });
    let timedOut = false;
    const giveUp = new AbortController();
    const timer = setTimeout(() => {
      timedOut = true;
      this.o.onEvent?.('timeout', { pid: w.pid, timeoutMs: this.o.timeoutMs });
      if (this.o.onTimeout === 'kill') {
        w.kill();
        return;
      }
      giveUp.abort();
      void this.probe(w);
      this.settle();
    }, this.o.timeoutMs);
    w.request(job.req, giveUp.signal).then(
      (reply) => {
        clearTimeout(timer);
        // The JVM's class state is broken: it is killed and the render tried once more on another.
        if (reply.broken !== undefined && this.breakWorker(w) && !job.retried) {
          job.retried = true;
          this.queue.unshift(job);
          this.pump();
          return;
        }
        if (reply.oom !== undefined) {
          // The heap ran out while this render ran: the JVM goes on, but is replaced (a class
          // whose initializer ran out of memory stays broken). A render that allocated little was
          // not the cause: it is tried once more.
          this.retire(w, 'out of memory');
          const cause = reply.oom >= (this.o.heapBytes ?? 0) / 4;
          if (!cause && !job.retried) {
            job.retried = true;
            this.queue.unshift(job);
            this.pump();
            return;
          }
        }
        job.resolve(reply);
        this.pump();
        this.settle();
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
        this.settle();
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    for (const job of this.queue.splice(0)) job.reject(new PoolClosed('renderer is shutting down'));
    const all = [...this.workers];
    for (const w of all) w.kill();
    await Promise.all(all.map((w) => w.waitExit()));
  }
}

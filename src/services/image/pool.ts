// A bounded work pool: at most `concurrency` tasks run, at most `queueLength` wait, and anything
// beyond is refused at once so memory stays flat under overload (the caller answers 503).

export class PoolFullError extends Error {
  constructor() {
    super('image pool saturated');
    this.name = 'PoolFullError';
  }
}

export interface PoolStats {
  running: number;
  queued: number;
}

export class WorkPool {
  private running = 0;
  private waiting: (() => void)[] = [];

  private readonly concurrency: number;
  private readonly queueLength: number;
  private readonly onChange?: (s: PoolStats) => void;
  constructor(concurrency: number, queueLength: number, onChange?: (s: PoolStats) => void) {
    this.concurrency = concurrency;
    this.queueLength = queueLength;
    this.onChange = onChange;
  }

  get stats(): PoolStats {
    return { running: this.running, queued: this.waiting.length };
  }

  /** Runs `task` when a slot is free; throws PoolFullError when the queue is full too. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queueLength) throw new PoolFullError();
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.onChange?.(this.stats);
      });
    } else {
      this.running++;
    }
    this.onChange?.(this.stats);
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // Hand the slot straight to the next waiter so `running` never dips and lets a newcomer jump the queue.
      if (next) next();
      else this.running--;
      this.onChange?.(this.stats);
    }
  }
}

// A counting semaphore with a bounded wait list: renders are CPU-heavy (a 2048 px PNG takes tens of
// milliseconds), so at most `slots` run at once and past `maxWaiting` callers are refused.
export class QueueFull extends Error {}

export class Semaphore {
  private running = 0;
  private waiting: (() => void)[] = [];

  private readonly slots: number;
  private readonly maxWaiting: number;
  constructor(slots: number, maxWaiting: number) {
    this.slots = slots;
    this.maxWaiting = maxWaiting;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) {
      if (this.waiting.length >= this.maxWaiting) throw new QueueFull('render queue full');
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

// Counters that expire on their own, in this process or in Redis (shared by every instance): the
// store behind byte budgets (byte-budget.ts).
import type { Redis } from 'ioredis';

/** A key names one budget, scope and window; it lives until the window ends. */
export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  /** The values of `keys` (0 when absent). */
  get(keys: readonly string[]): Promise<number[]>;
  /** Adds to each key, which lives until `expireAt` (ms since the epoch); resolves with the new values. */
  add(entries: readonly { key: string; n: number; expireAt: number }[]): Promise<number[]>;
  close?(): void;
}

export class MemoryCounters implements CounterStore {
  readonly kind = 'memory';
  private values = new Map<string, { n: number; expireAt: number }>();
  private timer: NodeJS.Timeout;

  constructor(sweepMs = 60_000) {
    this.timer = setInterval(() => this.sweep(), sweepMs);
    this.timer.unref();
  }

  async get(keys: readonly string[]): Promise<number[]> {
    const now = Date.now();
    return keys.map((k) => {
      const v = this.values.get(k);
      return v && v.expireAt > now ? v.n : 0;
    });
  }

  async add(entries: readonly { key: string; n: number; expireAt: number }[]): Promise<number[]> {
    const now = Date.now();
    return entries.map(({ key, n, expireAt }) => {
      let v = this.values.get(key);
      if (!v || v.expireAt <= now) {
        v = { n: 0, expireAt };
        this.values.set(key, v);
      }
      v.n += n;
      return v.n;
    });
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, v] of this.values) if (v.expireAt <= now) this.values.delete(k);
  }

  close(): void {
    clearInterval(this.timer);
  }
}

export class RedisCounters implements CounterStore {
  readonly kind = 'redis';
  private readonly redis: Redis;
  private readonly prefix: string;
  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
  }

  async get(keys: readonly string[]): Promise<number[]> {
    const got = await this.redis.mget(...keys.map((k) => this.prefix + k));
    return got.map((v) => Number(v ?? 0));
  }

  async add(entries: readonly { key: string; n: number; expireAt: number }[]): Promise<number[]> {
    const m = this.redis.multi();
    for (const e of entries) m.incrby(this.prefix + e.key, e.n).pexpireat(this.prefix + e.key, e.expireAt);
    const res = (await m.exec()) ?? [];
    const out: number[] = [];
    for (let i = 0; i < entries.length; i++) {
      const [err, v] = res[2 * i] ?? [new Error('no reply'), 0];
      if (err) throw err;
      out.push(Number(v));
    }
    return out;
  }
}

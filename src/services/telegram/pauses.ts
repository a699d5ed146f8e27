// Pause-until marks from Telegram's 429 retry_after (spec digest §4, §5): while a chat is paused the
// relay answers 429 itself, because ignoring retry_after escalates it and can get the bot restricted.
// In memory (bounded) or in Redis when configured, so every instance honours the same pause.
import type { Redis } from 'ioredis';

export interface Pauses {
  /** Milliseconds left on the pause of `id`, 0 when not paused. */
  remaining(id: string): Promise<number>;
  pause(id: string, ms: number): Promise<void>;
}

export class MemoryPauses implements Pauses {
  private until = new Map<string, number>();
  private readonly maxEntries: number;
  constructor(maxEntries = 10_000) {
    this.maxEntries = maxEntries;
  }

  async remaining(id: string): Promise<number> {
    const u = this.until.get(id);
    if (u === undefined) return 0;
    const left = u - Date.now();
    if (left <= 0) this.until.delete(id);
    return Math.max(0, left);
  }

  async pause(id: string, ms: number): Promise<void> {
    if (this.until.size >= this.maxEntries) {
      const now = Date.now();
      for (const [k, u] of this.until) if (u <= now) this.until.delete(k);
      // Still full: forget the oldest mark rather than grow without bound.
      if (this.until.size >= this.maxEntries) {
        const oldest = this.until.keys().next().value;
        if (oldest !== undefined) this.until.delete(oldest);
      }
    }
    this.until.delete(id);
    this.until.set(id, Date.now() + ms);
  }

  get size(): number {
    return this.until.size;
  }
}

export class RedisPauses implements Pauses {
  private readonly redis: Redis;
  private readonly prefix: string;
  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
  }

  async remaining(id: string): Promise<number> {
    const ttl = await this.redis.pttl(`${this.prefix}tg-pause:${id}`);
    return Math.max(ttl, 0);
  }

  async pause(id: string, ms: number): Promise<void> {
    await this.redis.set(`${this.prefix}tg-pause:${id}`, '1', 'PX', Math.max(1, Math.ceil(ms)));
  }
}

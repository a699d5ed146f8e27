// A space quota that holds under concurrency: a writer reserves its bytes before they are stored
// (a declared length up front, streamed bytes as they arrive), then commits the final size or
// releases the reservation on failure. Counted in Redis when configured, so every instance and
// cluster worker draws from one quota; reservations of a process that died expire on their own.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { unavailable } from '../../errors.ts';

export interface QuotaStore {
  readonly kind: 'memory' | 'redis';
  /**
   * Sets reservation `id` to `bytes` when the committed bytes plus every reservation (this one at
   * its new size) stay within `limit`: true; over it: false; null while the committed bytes are
   * not known yet (see init).
   */
  reserve(id: string, bytes: number, limit: number, ttlMs: number): Promise<boolean | null>;
  /** Drops reservation `id` (when given) and adds `delta` to the committed bytes (never below 0). */
  settle(id: string | null, delta: number): Promise<void>;
  /** Keeps running reservations alive for another `ttlMs`. */
  touch(ids: readonly string[], ttlMs: number): Promise<void>;
  /** Sets the committed bytes unless another instance did first. */
  init(used: number): Promise<void>;
  usage(): Promise<{ used: number; reserved: number } | null>;
}

export class MemoryQuotaStore implements QuotaStore {
  readonly kind = 'memory';
  private used: number | null = null;
  private res = new Map<string, { bytes: number; expireAt: number }>();

  private purge(now: number): number {
    let sum = 0;
    for (const [id, r] of this.res) {
      if (r.expireAt <= now) this.res.delete(id);
      else sum += r.bytes;
    }
    return sum;
  }

  async reserve(id: string, bytes: number, limit: number, ttlMs: number): Promise<boolean | null> {
    if (this.used === null) return null;
    const now = Date.now();
    const others = this.purge(now) - (this.res.get(id)?.bytes ?? 0);
    if (this.used + others + bytes > limit) return false;
    this.res.set(id, { bytes, expireAt: now + ttlMs });
    return true;
  }

  async settle(id: string | null, delta: number): Promise<void> {
    if (id) this.res.delete(id);
    if (this.used !== null) this.used = Math.max(0, this.used + delta);
  }

  async touch(ids: readonly string[], ttlMs: number): Promise<void> {
    for (const id of ids) {
      const r = this.res.get(id);
      if (r) r.expireAt = Date.now() + ttlMs;
    }
  }

  async init(used: number): Promise<void> {
    this.used ??= used;
  }

  async usage(): Promise<{ used: number; reserved: number } | null> {
    return this.used === null ? null : { used: this.used, reserved: this.purge(Date.now()) };
  }
}

// The server's clock decides expiry, so instances whose clocks differ agree on it.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: used, reservations (hash id -> bytes), expiries (zset id -> ms). ARGV: id, bytes, limit, ttl.
const RESERVE = `${NOW}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do redis.call('HDEL', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local used = redis.call('GET', KEYS[1])
if not used then return -1 end
local sum = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do sum = sum + tonumber(v) end
local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(used) + sum - cur + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[1])
return 1`;

// ARGV: id ('' = none), delta.
const SETTLE = `if ARGV[1] ~= '' then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('INCRBY', KEYS[1], ARGV[2]) < 0 then
  redis.call('SET', KEYS[1], 0)
end
return 1`;

// ARGV: ttl, ids...
const TOUCH = `${NOW}
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
return 1`;

type Scripts = {
  quotaReserve(u: string, r: string, e: string, id: string, b: number, l: number, t: number): Promise<number>;
  quotaSettle(u: string, r: string, e: string, id: string, d: number): Promise<number>;
  quotaTouch(e: string, ttl: number, ...ids: string[]): Promise<number>;
};

export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  private readonly redis: Redis & Scripts;
  private readonly keys: [string, string, string];
  constructor(redis: Redis, prefix: string) {
    redis.defineCommand('quotaReserve', { numberOfKeys: 3, lua: RESERVE });
    redis.defineCommand('quotaSettle', { numberOfKeys: 3, lua: SETTLE });
    redis.defineCommand('quotaTouch', { numberOfKeys: 1, lua: TOUCH });
    this.redis = redis as Redis & Scripts;
    this.keys = [`${prefix}used`, `${prefix}reserved`, `${prefix}expires`];
  }

  async reserve(id: string, bytes: number, limit: number, ttlMs: number): Promise<boolean | null> {
    const r = await this.redis.quotaReserve(...this.keys, id, bytes, limit, ttlMs);
    return r === -1 ? null : r === 1;
  }

  async settle(id: string | null, delta: number): Promise<void> {
    await this.redis.quotaSettle(...this.keys, id ?? '', delta);
  }

  async touch(ids: readonly string[], ttlMs: number): Promise<void> {
    if (ids.length) await this.redis.quotaTouch(this.keys[2], ttlMs, ...ids);
  }

  async init(used: number): Promise<void> {
    await this.redis.set(this.keys[0], used, 'NX');
  }

  async usage(): Promise<{ used: number; reserved: number } | null> {
    const [used, vals] = await Promise.all([this.redis.get(this.keys[0]), this.redis.hvals(this.keys[1])]);
    if (used === null) return null;
    return { used: Number(used), reserved: vals.reduce((a, v) => a + Number(v), 0) };
  }
}

export class QuotaFullError extends Error {}

export interface QuotaOptions {
  limit: number;
  store: QuotaStore;
  /** Counts the bytes already stored, once, when the store does not know them yet. */
  count: () => Promise<number>;
  failMode: 'open' | 'closed';
  logger: Logger;
  /** How far a streamed reservation grows past the bytes seen (fewer store round trips). */
  stepBytes?: number;
  /** A reservation not refreshed for this long is dropped (its process died). */
  ttlMs?: number;
}

let nextId = 0;

export class SpaceQuota {
  readonly limit: number;
  readonly o: QuotaOptions;
  readonly ttlMs: number;
  readonly step: number;
  private readonly live = new Set<Reservation>();
  private heartbeat: NodeJS.Timeout | null = null;
  private counting: Promise<void> | null = null;
  private readonly tag = `${process.pid}-${Date.now().toString(36)}`;

  constructor(o: QuotaOptions) {
    this.o = o;
    this.limit = o.limit;
    this.ttlMs = o.ttlMs ?? 60_000;
    this.step = o.stepBytes ?? Math.min(8 * 1024 ** 2, Math.max(64 * 1024, Math.floor(o.limit / 64)));
  }

  /** Reserves `bytes` (at least 1, so a full quota refuses at once); throws QuotaFullError. */
  async reserve(bytes: number): Promise<Reservation> {
    const r = new Reservation(this, `${this.tag}-${++nextId}`);
    await r.ensure(Math.max(1, bytes), true);
    return r;
  }

  /** Sets reservation `id` to `bytes`; false when that does not fit. */
  async put(id: string, bytes: number): Promise<boolean> {
    for (;;) {
      const ok = await this.o.store.reserve(id, bytes, this.limit, this.ttlMs);
      if (ok !== null) return ok;
      await this.init();
    }
  }

  /** Counts the stored bytes into the store when it does not know them (once per process at a time). */
  private init(): Promise<void> {
    this.counting ??= this.o
      .count()
      .then((n) => this.o.store.init(n))
      .finally(() => {
        this.counting = null;
      });
    return this.counting;
  }

  /** Adds committed bytes outside a reservation (deletes, expiry); failures are logged, not thrown. */
  async adjust(delta: number): Promise<void> {
    if (delta === 0) return;
    await this.o.store.settle(null, delta).catch((err) => this.storeFailed(err));
  }

  async usage(): Promise<{ used: number; reserved: number }> {
    let u = await this.o.store.usage();
    if (!u) {
      await this.init();
      u = await this.o.store.usage();
    }
    return u ?? { used: 0, reserved: 0 };
  }

  track(r: Reservation, on: boolean): void {
    if (on) this.live.add(r);
    else this.live.delete(r);
    if (this.live.size > 0 && !this.heartbeat) {
      this.heartbeat = setInterval(() => {
        const ids = [...this.live].map((x) => x.id);
        this.o.store.touch(ids, this.ttlMs).catch((err) => this.storeFailed(err));
      }, this.ttlMs / 3);
      this.heartbeat.unref();
    } else if (this.live.size === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }

  storeFailed(err: unknown): void {
    this.o.logger.warn({ err: { message: (err as Error).message } }, 'quota store failed');
  }

  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

export class Reservation {
  readonly id: string;
  bytes = 0;
  /** The store failed and the fail mode is open: the writer goes on uncounted. */
  private unchecked = false;
  private done = false;
  private readonly q: SpaceQuota;
  constructor(q: SpaceQuota, id: string) {
    this.q = q;
    this.id = id;
  }

  /** Grows the reservation to cover `total` bytes (a step more when streaming); throws QuotaFullError. */
  async ensure(total: number, exact = false): Promise<void> {
    if (this.unchecked || total <= this.bytes) return;
    try {
      const ahead = exact ? total : Math.min(total + this.q.step, this.q.limit);
      let got = ahead;
      let ok = ahead >= total && (await this.q.put(this.id, ahead));
      if (!ok && ahead !== total) {
        got = total;
        ok = await this.q.put(this.id, total);
      }
      if (!ok) throw new QuotaFullError('storage quota is full');
      if (this.bytes === 0) this.q.track(this, true);
      this.bytes = got;
    } catch (err) {
      if (err instanceof QuotaFullError) throw err;
      this.q.storeFailed(err);
      if (this.q.o.failMode === 'closed')
        throw unavailable('storage quota unavailable, try again shortly', 5, 'QUOTA_UNAVAILABLE');
      this.unchecked = true;
    }
  }

  /** The write is stored: drop the reservation and count `delta` bytes as committed. */
  async commit(delta: number): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.q.track(this, false);
    await this.q.o.store
      .settle(this.bytes > 0 ? this.id : null, delta)
      .catch((err) => this.q.storeFailed(err));
  }

  /** The write failed or was aborted: give the space back. */
  async release(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.q.track(this, false);
    if (this.bytes > 0) await this.q.o.store.settle(this.id, 0).catch((err) => this.q.storeFailed(err));
  }
}

/** The quota on the shared Redis when there is one, else counted in this process. */
export function quotaStore(redis: Redis | null, prefix: string): QuotaStore {
  return redis ? new RedisQuotaStore(redis, prefix) : new MemoryQuotaStore();
}

// Named exclusive locks with a lease: in this process, or in Redis (SET NX PX) so every instance
// sharing it excludes the others. A holder renews its lease while it works; one that dies lets it
// lapse after ttlMs. Callers wait a bounded time for a busy lock and then give up (e.g. 423).
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface HeldLock {
  /** Gives the lock up (only if still ours: a lapsed lease may belong to someone else by now). */
  release(): Promise<void>;
}

export interface LockStore {
  readonly kind: 'memory' | 'redis';
  /** True when `name` was free and is now held by `owner` for `ttlMs`. */
  tryTake(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease if `owner` still holds it. */
  renew(name: string, owner: string, ttlMs: number): Promise<void>;
  drop(name: string, owner: string): Promise<void>;
}

export class MemoryLockStore implements LockStore {
  readonly kind = 'memory';
  private held = new Map<string, { owner: string; until: number }>();

  async tryTake(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const cur = this.held.get(name);
    if (cur && cur.until > now) return false;
    this.held.set(name, { owner, until: now + ttlMs });
    return true;
  }

  async renew(name: string, owner: string, ttlMs: number): Promise<void> {
    const cur = this.held.get(name);
    if (cur?.owner === owner) cur.until = Date.now() + ttlMs;
  }

  async drop(name: string, owner: string): Promise<void> {
    if (this.held.get(name)?.owner === owner) this.held.delete(name);
  }
}

// Compare-and-act scripts: only the owner's token may renew or delete its lease.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const DROP = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

type Scripts = {
  lockRenew(k: string, owner: string, ttl: number): Promise<number>;
  lockDrop(k: string, owner: string): Promise<number>;
};

export class RedisLockStore implements LockStore {
  readonly kind = 'redis';
  private readonly redis: Redis & Scripts;
  private readonly prefix: string;
  constructor(redis: Redis, prefix: string) {
    redis.defineCommand('lockRenew', { numberOfKeys: 1, lua: RENEW });
    redis.defineCommand('lockDrop', { numberOfKeys: 1, lua: DROP });
    this.redis = redis as Redis & Scripts;
    this.prefix = prefix;
  }

  async tryTake(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.prefix + name, owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async renew(name: string, owner: string, ttlMs: number): Promise<void> {
    await this.redis.lockRenew(this.prefix + name, owner, ttlMs);
  }

  async drop(name: string, owner: string): Promise<void> {
    await this.redis.lockDrop(this.prefix + name, owner);
  }
}

export interface LockOptions {
  /** How long to wait for a busy lock before giving up (0 = try once). */
  waitMs: number;
  /** Lease length; renewed every third of it while held. */
  ttlMs: number;
}

const POLL_MS = 50;

export class Locks {
  readonly store: LockStore;
  constructor(store: LockStore) {
    this.store = store;
  }

  /** The held lock, or null when someone else still holds it after `waitMs`. */
  async acquire(name: string, o: LockOptions): Promise<HeldLock | null> {
    const owner = randomBytes(12).toString('base64url');
    const until = Date.now() + o.waitMs;
    while (!(await this.store.tryTake(name, owner, o.ttlMs))) {
      if (Date.now() >= until) return null;
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, until - Date.now()))));
    }
    const timer = setInterval(() => {
      this.store.renew(name, owner, o.ttlMs).catch(() => {});
    }, o.ttlMs / 3);
    timer.unref();
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        await this.store.drop(name, owner).catch(() => {});
      },
    };
  }
}

export function lockStore(redis: Redis | null, prefix: string): LockStore {
  return redis ? new RedisLockStore(redis, prefix) : new MemoryLockStore();
}

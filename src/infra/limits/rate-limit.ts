// Shared request budgets: fixed windows counted in memory (one instance) or in Redis (all
// instances share the budget). Any route takes a budget from config and gets 429 in its own
// envelope, with Retry-After and the IETF RateLimit-* headers.
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { tooMany, unavailable } from '../../errors.ts';
import type { Rate } from '../config/schema.ts';

export interface Hit {
  count: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

export interface LimitStore {
  readonly kind: 'memory' | 'redis';
  hit(key: string, windowMs: number): Promise<Hit>;
  close?(): Promise<void>;
}

/** In-process fixed windows. Expired entries are swept so memory stays bounded by active keys. */
export class MemoryStore implements LimitStore {
  readonly kind = 'memory';
  private windows = new Map<string, { count: number; resetAt: number }>();
  private timer: NodeJS.Timeout;

  constructor(sweepMs = 30_000) {
    this.timer = setInterval(() => this.sweep(), sweepMs);
    this.timer.unref();
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetMs: w.resetAt - now };
  }

  sweep(): void {
    const now = Date.now();
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
  }
}

// INCR and set the expiry on the first hit in one round trip, atomically.
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

export class RedisStore implements LimitStore {
  readonly kind = 'redis';
  private redis: Redis;
  private prefix: string;
  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
    redis.defineCommand('devutilHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    const r = (await (
      this.redis as unknown as { devutilHit(k: string, w: number): Promise<[number, number]> }
    ).devutilHit(`${this.prefix}rl:${key}`, windowMs)) as [number, number];
    return { count: Number(r[0]), resetMs: Number(r[1]) };
  }
}

export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSec: number;
}

export interface LimiterOptions {
  failMode: 'open' | 'closed';
  logger: Logger;
  /** Called when the store fails and the failure mode decides. */
  onStoreError?: (err: unknown) => void;
}

export class RateLimiter {
  readonly store: LimitStore;
  private opts: LimiterOptions;
  constructor(store: LimitStore, opts: LimiterOptions) {
    this.store = store;
    this.opts = opts;
  }

  /** Counts one request of `id` (usually the client IP) against `bucket`'s budget. */
  async take(bucket: string, id: string, rate: Rate): Promise<Decision> {
    if (rate.limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetSec: 0 };
    const { count, resetMs } = await this.store.hit(`${bucket}:${id}`, rate.windowMs);
    return {
      allowed: count <= rate.limit,
      limit: rate.limit,
      remaining: Math.max(0, rate.limit - count),
      resetSec: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }

  /**
   * An onRequest hook that charges each request to `bucket`. `key` picks who pays (default: the
   * client IP). Store failures follow the configured fail mode. Routes put it in `onRequest`, so a
   * client over its budget is answered before any of its body is read (a slow body cannot hold a
   * connection on a refused request).
   */
  hook(
    bucket: string,
    rate: Rate | (() => Rate),
    key?: (req: FastifyRequest) => string,
  ): onRequestAsyncHookHandler {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const r = typeof rate === 'function' ? rate() : rate;
      if (r.limit <= 0) return;
      let d: Decision;
      try {
        d = await this.take(bucket, key ? key(req) : req.clientIp, r);
      } catch (err) {
        this.opts.onStoreError?.(err);
        if (this.opts.failMode === 'open') {
          req.log.warn(
            { err: { message: (err as Error).message }, bucket },
            'rate limit store failed; letting request through',
          );
          return;
        }
        throw unavailable('rate limiter unavailable, try again shortly', 5, 'LIMITER_UNAVAILABLE');
      }
      applyHeaders(reply, d, r);
      if (!d.allowed) {
        throw tooMany(
          `rate limit exceeded: ${d.limit} requests per ${r.windowMs / 1000}s; retry in ${d.resetSec}s`,
          d.resetSec,
        );
      }
    };
  }

  async close(): Promise<void> {
    await this.store.close?.();
  }
}

export function applyHeaders(reply: FastifyReply, d: Decision, r: Rate): void {
  reply.header('ratelimit-limit', d.limit);
  reply.header('ratelimit-remaining', d.remaining);
  reply.header('ratelimit-reset', d.resetSec);
  reply.header('ratelimit-policy', `${d.limit};w=${Math.ceil(r.windowMs / 1000)}`);
}

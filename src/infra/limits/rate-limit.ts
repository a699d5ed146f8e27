// Request budgets: fixed windows on the shared-state layer's expiring counters (in memory, or in
// Redis where every instance shares them), counted per client key (an IPv4 address or an IPv6
// network, req.clientKey). Any route takes a budget from config and gets 429 in its own envelope,
// with Retry-After and the IETF RateLimit-* headers.
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Logger } from 'pino';
import type { Rate } from '../config/schema.ts';
import { tooMany, unavailable } from '../http/errors.ts';
import { Outage } from '../observe/outage.ts';
import type { SharedState } from '../state/state.ts';

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
  readonly state: SharedState;
  private opts: LimiterOptions;
  /** While the store is down, failing open warns once, not once per request. */
  private readonly storeOutage: Outage;
  constructor(state: SharedState, opts: LimiterOptions) {
    this.state = state;
    this.opts = opts;
    this.storeOutage = new Outage(opts.logger, 'rate limit store');
  }

  /** Counts one request of `id` (a client key, a bot...) against `bucket`'s budget. */
  async take(bucket: string, id: string, rate: Rate): Promise<Decision> {
    if (rate.limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetSec: 0 };
    const hit = await this.state.count(`rl:${bucket}:${id}`, 1, { ttlMs: rate.windowMs });
    this.storeOutage.ok();
    const count = hit.value;
    const resetMs = hit.ttlMs < 0 ? rate.windowMs : hit.ttlMs;
    return {
      allowed: count <= rate.limit,
      limit: rate.limit,
      remaining: Math.max(0, rate.limit - count),
      resetSec: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }

  /**
   * What a store failure (from take()) means for a request: refused with 503 when limits fail
   * closed; let through when they fail open, warned on `log` once per outage of the store.
   */
  storeFailed(err: unknown, bucket: string, log: Pick<Logger, 'warn'>): void {
    if (this.opts.failMode === 'closed')
      throw unavailable('rate limiter unavailable, try again shortly', 5, 'LIMITER_UNAVAILABLE');
    this.storeOutage.failed(err, 'rate limit store failed; letting request through', { bucket }, log);
  }

  /**
   * An onRequest hook that charges each request to `bucket`. `key` picks who pays (default: the
   * client key: the address after the trusted-proxy walk, IPv6 by network). Store failures follow the configured fail mode. Routes put it in `onRequest`, so a
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
        d = await this.take(bucket, key ? key(req) : req.clientKey, r);
      } catch (err) {
        this.opts.onStoreError?.(err);
        this.storeFailed(err, bucket, req.log);
        return;
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

  async close(): Promise<void> {}
}

export function applyHeaders(reply: FastifyReply, d: Decision, r: Rate): void {
  reply.header('ratelimit-limit', d.limit);
  reply.header('ratelimit-remaining', d.remaining);
  reply.header('ratelimit-reset', d.resetSec);
  reply.header('ratelimit-policy', `${d.limit};w=${Math.ceil(r.windowMs / 1000)}`);
}

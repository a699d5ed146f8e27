// Request budgets: fixed windows on the shared-state layer's expiring counters (in memory, or in
// Redis where every instance shares them), counted per client key (an IPv4 address or an IPv6
// network, req.clientKey). Any route takes a budget from config and gets 429 in its own envelope,
// with Retry-After and the IETF RateLimit-* headers. Answers of the fast lane (infra/http/
// fast-lane.ts) are charged here too, synchronously against this instance's view of the window
// (takeNow) and written to the in-memory state in batches (one write per key per FLUSH_MS); with a
// store several instances share, limited routes are left to their hooks, so the budget stays one.
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

/** What a route's limit hook charged a request to, for the fast lane to charge its repeats alike. */
export interface Charge {
  bucket: string;
  rate: Rate | (() => Rate);
}

const charges = new WeakMap<object, Charge>();

/** The bucket and rate a request was charged to by its route's limit hook (default client key only). */
export function chargeOf(req: object): Charge | undefined {
  return charges.get(req);
}

/** A window as this instance sees it: the store's count when last heard, plus its own unwritten charges. */
interface LocalWindow {
  /** The store's count as of its last answer (take() or a batch write). */
  stored: number;
  /** Charged here since the last batch went out. */
  pending: number;
  /** Charged here and on the way to the store. */
  inflight: number;
  /** When the window ends (this clock). */
  endsAt: number;
  windowMs: number;
}

/**
 * How long the fast lane's charges wait before they are written: other instances see them after
 * at most this long (one client spread over N instances may pass its limit by what N-1 of them
 * admit in that time); this instance's own decisions always count them.
 */
export const FLUSH_MS = 100;
/** Windows this instance keeps a view of (expired ones are dropped first when it is full). */
const LOCAL_MAX = 50_000;

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
  /** Buckets the fast lane charges: their windows are kept in `local`. */
  private readonly laneBuckets = new Set<string>();
  private readonly local = new Map<string, LocalWindow>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** The store failed on the last write: the fast lane leaves decisions to take() until it answers. */
  private failing = false;
  constructor(state: SharedState, opts: LimiterOptions) {
    this.state = state;
    this.opts = opts;
    this.storeOutage = new Outage(opts.logger, 'rate limit store');
  }

  /** Counts one request of `id` (a client key, a bot...) against `bucket`'s budget. */
  async take(bucket: string, id: string, rate: Rate): Promise<Decision> {
    if (rate.limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetSec: 0 };
    const key = `rl:${bucket}:${id}`;
    const hit = await this.state.count(key, 1, { ttlMs: rate.windowMs });
    this.storeOutage.ok();
    this.failing = false;
    const resetMs = hit.ttlMs < 0 ? rate.windowMs : hit.ttlMs;
    // This instance's fast-lane charges the store has not counted yet are spent all the same.
    const w = this.laneBuckets.has(bucket) ? this.observe(key, hit.value, resetMs, rate.windowMs) : undefined;
    const count = hit.value + (w ? w.pending + w.inflight : 0);
    return {
      allowed: count <= rate.limit,
      limit: rate.limit,
      remaining: Math.max(0, rate.limit - count),
      resetSec: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }

  /** Lets the fast lane charge `bucket` (takeNow): its windows are kept from then on. */
  laneCharges(bucket: string): void {
    this.laneBuckets.add(bucket);
  }

  /**
   * Charges one request synchronously from this instance's view of the window, or answers null
   * when that view cannot decide: no view yet (the window's first request here), the window over,
   * the store failing, or the budget spent. A null leaves the request to take() through the route's
   * hook, which counts it in the store, answers the 429 and refreshes the view.
   */
  takeNow(bucket: string, id: string, rate: Rate, now = Date.now()): Decision | null {
    if (rate.limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetSec: 0 };
    // A store that other instances share (Redis) holds one budget for all of them, exact only
    // when every charge reaches it before the decision: there the route's own hook decides.
    if (this.failing || this.state.kind !== 'memory') return null;
    const w = this.local.get(`rl:${bucket}:${id}`);
    if (!w || now >= w.endsAt || w.windowMs !== rate.windowMs) return null;
    const count = w.stored + w.pending + w.inflight + 1;
    if (count > rate.limit) return null;
    w.pending++;
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref();
    }
    return {
      allowed: true,
      limit: rate.limit,
      remaining: rate.limit - count,
      resetSec: Math.max(1, Math.ceil((w.endsAt - now) / 1000)),
    };
  }

  /** Keeps the store's count of a window as this instance last heard it. */
  private observe(key: string, stored: number, resetMs: number, windowMs: number): LocalWindow {
    const now = Date.now();
    const endsAt = now + resetMs;
    const w = this.local.get(key);
    if (w && now < w.endsAt && endsAt <= w.endsAt + 1000) {
      // The same window: answers can arrive out of order, and its count only grows.
      w.stored = Math.max(w.stored, stored);
      w.endsAt = endsAt;
      return w;
    }
    if (w) {
      // A new window (the old one ended, here or in the store).
      w.stored = stored;
      w.endsAt = endsAt;
      w.windowMs = windowMs;
      return w;
    }
    if (this.local.size >= LOCAL_MAX) this.prune(now);
    const fresh = { stored, pending: 0, inflight: 0, endsAt, windowMs };
    this.local.set(key, fresh);
    return fresh;
  }

  private prune(now: number): void {
    for (const [k, w] of this.local)
      if (now >= w.endsAt && w.pending === 0 && w.inflight === 0) this.local.delete(k);
    // Still full of live windows: forget the oldest (their next request goes through take()).
    for (const [k] of this.local) {
      if (this.local.size < LOCAL_MAX) break;
      this.local.delete(k);
    }
  }

  /** Writes the fast lane's pending charges to the store (one count per window). */
  flush(): Promise<void> {
    this.flushing ??= this.writePending().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const now = Date.now();
    const batch: [string, LocalWindow, number][] = [];
    for (const [key, w] of this.local) {
      if (w.pending === 0) continue;
      const n = w.pending;
      w.pending = 0;
      // A window that ended meanwhile is not charged to the next one.
      if (now >= w.endsAt) continue;
      w.inflight += n;
      batch.push([key, w, n]);
    }
    await Promise.all(
      batch.map(async ([key, w, n]) => {
        try {
          const hit = await this.state.count(key, n, { ttlMs: w.windowMs });
          this.failing = false;
          w.stored = Math.max(w.stored, hit.value);
          if (hit.ttlMs >= 0) w.endsAt = Date.now() + hit.ttlMs;
        } catch (err) {
          // Dropped, as take() lets a request through uncounted while the store fails open; the
          // lane leaves every decision to take() (and its fail mode) until the store answers.
          if (!this.failing) this.opts.onStoreError?.(err);
          this.failing = true;
        } finally {
          w.inflight -= n;
        }
      }),
    );
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
      // For the fast lane, which may answer this route's repeats itself (GET and HEAD only).
      if (!key && (req.method === 'GET' || req.method === 'HEAD')) charges.set(req, { bucket, rate });
      if (!d.allowed) {
        throw tooMany(
          `rate limit exceeded: ${d.limit} requests per ${r.windowMs / 1000}s; retry in ${d.resetSec}s`,
          d.resetSec,
        );
      }
    };
  }

  async close(): Promise<void> {
    await this.flush();
  }
}

export function applyHeaders(reply: FastifyReply, d: Decision, r: Rate): void {
  reply.header('ratelimit-limit', d.limit);
  reply.header('ratelimit-remaining', d.remaining);
  reply.header('ratelimit-reset', d.resetSec);
  reply.header('ratelimit-policy', `${d.limit};w=${Math.ceil(r.windowMs / 1000)}`);
}

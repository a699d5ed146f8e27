// A space quota whose count equals what the store holds, on one instance or many (a reservation
// pool on the shared state). Before a writer stores anything it reserves its bytes (a declared
// length up front, streamed bytes as they arrive; a reservation is set to its new total, never
// added to). After it published (or deleted) a key, settle(key) reads what the store holds under
// that key now and writes that one ledger line, holding the key's lease: the last settle of a key
// always runs after its last change and sees it, so parallel replacements of one key cannot each
// subtract the same old size. The counted bytes are the ledger's sum.
//
// Failure: the quota fails closed (a reservation the store cannot confirm is refused with 503, and
// a writer whose reservation lapsed or cannot be kept alive stops); a settle that cannot reach the
// store is kept and retried until it lands, its reservation kept alive meanwhile. A full count
// (reconcile: list the store, settle every key whose line differs) runs at start-up, periodically,
// and when the store answers again after failing, and says in the log what it corrected.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { unavailable } from '../http/errors.ts';
import { Leases } from '../state/lease.ts';
import type { SharedState } from '../state/state.ts';

export class QuotaFullError extends Error {}

export interface QuotaOptions {
  limit: number;
  state: SharedState;
  /** The pool's name on the shared state (one per quota). */
  pool: string;
  /** Every counted key and its size, from a listing of the store (the full count). */
  list: () => Promise<Map<string, number>>;
  /** What the store holds under `key` now (null: nothing). */
  head: (key: string) => Promise<number | null>;
  logger: Logger;
  /** How far a streamed reservation grows past the bytes seen (fewer store round trips). */
  stepBytes?: number;
  /** A reservation not kept alive for this long lapses (its process died). */
  ttlMs?: number;
  /** How often failed settles are retried. */
  retryMs?: number;
}

/** Dropped reservations remembered for a reconnection at most (beyond, the oldest lapse by ttl). */
const MAX_REMEMBERED = 10_000;

const quotaUnavailable = (cause?: unknown) =>
  unavailable('storage quota unavailable, try again shortly', 5, 'QUOTA_UNAVAILABLE', { cause });

export class SpaceQuota {
  readonly limit: number;
  readonly ttlMs: number;
  readonly step: number;
  private readonly o: QuotaOptions;
  private readonly leases: Leases;
  /** Reservations this process holds (kept alive by the heartbeat). */
  private readonly live = new Map<string, Reservation>();
  /** Keys whose settle has not landed yet, with the reservations that wait for it. */
  private readonly pending = new Map<string, Set<Reservation>>();
  /** Reservations given back while the store was away: dropped as soon as it answers. */
  private readonly unreleased = new Set<string>();
  private heartbeat: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private counting: Promise<void> | null = null;
  private failing = false;
  private closed = false;
  /** Reservations dropped lately, with when: dropped again after a reconnection (see remember()). */
  private readonly dropped = new Map<string, number>();
  private readonly tag = randomBytes(6).toString('base64url');
  private seq = 0;

  constructor(o: QuotaOptions) {
    this.o = o;
    this.limit = o.limit;
    this.ttlMs = o.ttlMs ?? 60_000;
    this.step = o.stepBytes ?? Math.min(8 * 1024 ** 2, Math.max(64 * 1024, Math.floor(o.limit / 64)));
    this.leases = new Leases(o.state);
    o.state.onReconnect(() => void this.recover());
  }

  /**
   * After a Sentinel failover the last writes this process made on the old primary may be gone
   * (replication is asynchronous, and the client moves only once the sentinels announce the new
   * one): a dropped reservation would come back and hold its space until its ttl (every upload got
   * 507 for a minute in test/e2e/redis-failover.test.ts), a ledger line would go back to what it
   * was. So the reservations dropped within the last ttl are dropped again (idempotent: ids are
   * never reused) and the ledger is checked against the store.
   */
  private async recover(): Promise<void> {
    if (this.closed) return;
    this.o.logger.info(
      { reservations: this.dropped.size },
      'files quota store reconnected; dropping again and counting the store',
    );
    for (const id of [...this.dropped.keys()]) {
      try {
        await this.o.state.settle(this.o.pool, id, []);
      } catch {
        this.unreleased.add(id);
        this.scheduleRetry();
      }
    }
    await this.reconcile().catch(() => {});
  }

  /** Notes a reservation whose drop landed; forgets those older than the ttl (they lapsed anyway). */
  private remember(id: string): void {
    const now = Date.now();
    this.dropped.set(id, now);
    for (const [k, at] of this.dropped) {
      if (now - at <= this.ttlMs && this.dropped.size <= MAX_REMEMBERED) break;
      this.dropped.delete(k);
    }
  }

  /**
   * Reserves `bytes` (at least 1, so a full quota refuses at once) for a writer. `credit`: bytes of
   * this write already counted in the ledger (resumable upload parts that become the file), which
   * the reservation does not take again. Throws QuotaFullError, or a 503 when the store is away.
   */
  async reserve(bytes: number, credit = 0): Promise<Reservation> {
    const r = new Reservation(this, `${this.tag}-${++this.seq}`, credit);
    await r.ensure(Math.max(credit + 1, bytes), true);
    return r;
  }

  /** Sets reservation `r` to `bytes`; false when that does not fit. Throws when the store is away. */
  async put(r: Reservation, bytes: number): Promise<boolean> {
    for (let tries = 0; ; tries++) {
      let got: Awaited<ReturnType<SharedState['reserve']>>;
      try {
        got = await this.guard(() => this.o.state.reserve(this.o.pool, r.id, bytes, this.limit, this.ttlMs));
      } catch (err) {
        // The call may still run on the store after the client gave up (a frozen Redis works off
        // its queued commands when it wakes): its writer is refused, so whatever it reserved is
        // dropped as soon as the store answers, not left to lapse with the ttl (every upload after
        // a freeze got 507 until then).
        this.unreleased.add(r.id);
        this.scheduleRetry();
        throw err;
      }
      if (got !== 'unknown') {
        if (got === 'ok') this.track(r);
        return got === 'ok';
      }
      if (tries > 2) throw quotaUnavailable(new Error('quota not counted'));
      await this.count();
    }
  }

  /** Runs a store call; a failure is logged once per outage and rethrown as 503. */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const v = await fn();
      if (this.failing) {
        this.failing = false;
        this.o.logger.info('files quota store answers again; counting the store');
        void this.reconcile().catch(() => {});
      }
      return v;
    } catch (err) {
      if (!this.failing)
        this.o.logger.warn(
          { err: { message: (err as Error).message } },
          'quota store failed; refusing uploads',
        );
      this.failing = true;
      throw quotaUnavailable(err);
    }
  }

  /** Counts the store into a pool that has no ledger yet (once per process at a time). */
  private count(): Promise<void> {
    this.counting ??= (async () => {
      const listed = await this.o.list();
      await this.o.state.poolInit(this.o.pool, listed);
      const total = [...listed.values()].reduce((a, b) => a + b, 0);
      this.o.logger.info({ keys: listed.size, bytes: total }, 'files quota counted');
    })().finally(() => {
      this.counting = null;
    });
    return this.counting;
  }

  /**
   * Writes what the store holds under `key` into the ledger and drops reservation `r` (which stays
   * alive until this lands). Never throws: a settle that fails is retried in the background.
   */
  async settle(key: string, r: Reservation | null = null): Promise<void> {
    let waiting = this.pending.get(key);
    if (!waiting) {
      waiting = new Set();
      this.pending.set(key, waiting);
    }
    if (r) waiting.add(r);
    await this.flushKey(key);
  }

  private async flushKey(key: string): Promise<boolean> {
    const waiting = this.pending.get(key);
    if (!waiting) return true;
    try {
      const lease = await this.leases.acquire(`quota:${this.o.pool}:${key}`, { waitMs: 5000, ttlMs: 10_000 });
      if (!lease) throw new Error(`quota key busy: ${key}`);
      try {
        const size = await this.o.head(key);
        const rs = [...waiting];
        // The first reservation goes with the line; any others (rare) are dropped after it.
        await this.guard(() =>
          this.o.state.settle(this.o.pool, rs[0]?.id ?? null, [{ key, size: size ?? null }]),
        );
        for (const r of rs.slice(1)) await this.guard(() => this.o.state.settle(this.o.pool, r.id, []));
        for (const r of rs) {
          waiting.delete(r);
          this.untrack(r);
          this.remember(r.id);
        }
        if (waiting.size === 0) this.pending.delete(key);
        return true;
      } finally {
        await lease.release();
      }
    } catch (err) {
      if (!this.failing)
        this.o.logger.warn(
          { key, err: { message: (err as Error).message } },
          'quota settle failed; retrying',
        );
      this.scheduleRetry();
      return false;
    }
  }

  private scheduleRetry(): void {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(async () => {
      this.retry = null;
      for (const id of [...this.unreleased]) {
        try {
          await this.o.state.settle(this.o.pool, id, []);
          this.unreleased.delete(id);
          this.remember(id);
        } catch {
          this.scheduleRetry();
          return;
        }
      }
      for (const key of [...this.pending.keys()]) if (!(await this.flushKey(key))) break;
    }, this.o.retryMs ?? 2000);
    this.retry.unref();
  }

  /**
   * Drops a reservation that stored nothing. Never throws: a release the store did not take is
   * retried (else the space would stay taken until the reservation lapses).
   */
  async release(r: Reservation): Promise<void> {
    this.untrack(r);
    try {
      await this.o.state.settle(this.o.pool, r.id, []);
      this.remember(r.id);
    } catch {
      this.unreleased.add(r.id);
      this.scheduleRetry();
    }
  }

  /**
   * The full count: lists the store and settles every key whose ledger line differs (each settle
   * reads the key again under its lease, so uploads running meanwhile are not undone). Logs what
   * it corrected; resolves with the number of keys settled.
   */
  async reconcile(): Promise<number> {
    const before = await this.guard(() => this.o.state.poolUsage(this.o.pool));
    if (before.settled === null) {
      await this.count();
      return 0;
    }
    const [listed, ledger] = await Promise.all([this.o.list(), this.o.state.poolLedger(this.o.pool)]);
    const differ = new Set<string>();
    for (const [k, v] of listed) if (ledger.get(k) !== v) differ.add(k);
    for (const k of ledger.keys()) if (!listed.has(k)) differ.add(k);
    for (const k of differ) await this.settle(k);
    const after = await this.guard(() => this.o.state.poolUsage(this.o.pool));
    if (differ.size > 0 && after.settled !== before.settled)
      this.o.logger.warn(
        { keys: differ.size, countedBefore: before.settled, countedAfter: after.settled },
        'files quota corrected from the store',
      );
    return differ.size;
  }

  async usage(): Promise<{ used: number; reserved: number }> {
    let u = await this.guard(() => this.o.state.poolUsage(this.o.pool));
    if (u.settled === null) {
      await this.count();
      u = await this.guard(() => this.o.state.poolUsage(this.o.pool));
    }
    return { used: u.settled ?? 0, reserved: u.reserved };
  }

  private track(r: Reservation): void {
    this.live.set(r.id, r);
    if (this.heartbeat || this.closed) return;
    this.heartbeat = setInterval(() => void this.keepAlive(), this.ttlMs / 3);
    this.heartbeat.unref();
  }

  private untrack(r: Reservation): void {
    this.live.delete(r.id);
    if (this.live.size === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }

  /**
   * Keeps this process's reservations alive. One that lapsed (Redis lost it, or it was frozen past
   * its ttl) is taken again if it still fits; a writer whose reservation cannot be confirmed within
   * its ttl is stopped (fail closed). Reservations of stored keys waiting for their settle are kept
   * as they are: their bytes are in the store either way.
   */
  private async keepAlive(): Promise<void> {
    const rs = [...this.live.values()];
    const sent = Date.now();
    let lost: string[];
    try {
      lost = await this.o.state.keep(
        this.o.pool,
        rs.map((r) => r.id),
        this.ttlMs,
      );
    } catch {
      for (const r of rs) if (sent - r.confirmed > this.ttlMs * 0.8) r.stop(quotaUnavailable());
      return;
    }
    const gone = new Set(lost);
    for (const r of rs) {
      if (!gone.has(r.id)) r.confirmed = sent;
      else if (r.writing) {
        const ok = await this.put(r, r.bytes).catch(() => false);
        if (ok) r.confirmed = sent;
        else r.stop(quotaUnavailable(new Error('reservation lapsed')));
      }
    }
  }

  close(): void {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.retry) clearTimeout(this.retry);
    this.heartbeat = null;
    this.retry = null;
  }
}

export class Reservation {
  readonly id: string;
  /** Bytes held in the pool (beyond the credit). */
  bytes = 0;
  /** Epoch ms the pool last confirmed this reservation. */
  confirmed = Date.now();
  /** Still streaming (false once the write ended: its fate is settle or release). */
  writing = true;
  private readonly credit: number;
  private stopped: unknown = null;
  private readonly q: SpaceQuota;

  constructor(q: SpaceQuota, id: string, credit: number) {
    this.q = q;
    this.id = id;
    this.credit = credit;
  }

  /** The writer must stop: its space can no longer be vouched for. */
  stop(err: unknown): void {
    this.stopped ??= err;
  }

  /**
   * Grows the reservation to cover `total` bytes of the write (a step more when streaming); throws
   * QuotaFullError when they do not fit, or the 503 that stopped this reservation.
   */
  async ensure(total: number, exact = false): Promise<void> {
    if (this.stopped) throw this.stopped;
    const need = total - this.credit;
    if (need <= this.bytes) return;
    const ahead = exact ? need : Math.min(need + this.q.step, this.q.limit);
    let got = ahead;
    let ok = await this.q.put(this, ahead);
    if (!ok && ahead !== need) {
      got = need;
      ok = await this.q.put(this, need);
    }
    if (!ok) throw new QuotaFullError('storage quota is full');
    this.bytes = got;
    this.confirmed = Date.now();
  }

  /** The write published `key` (or changed it): count what it holds and drop the reservation. */
  async settle(key: string): Promise<void> {
    this.writing = false;
    await this.q.settle(key, this);
  }

  /** The write stored nothing: give the space back. */
  async release(): Promise<void> {
    this.writing = false;
    await this.q.release(this);
  }
}

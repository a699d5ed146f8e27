// Named exclusive leases on the shared state: one holder at a time, across every instance on one
// Redis. A holder renews its lease every third of its life; when a renewal finds the lease gone (or
// cannot confirm it before the lease would lapse) the holder's signal aborts at once, so it stops
// writing before another holder can start. A holder that dies (kill -9) lets the lease lapse after
// ttlMs: short leases make a crashed node's work available to the others within seconds.
import { randomBytes } from 'node:crypto';
import type { SharedState } from './state.ts';

export interface HeldLease {
  /** Aborts when the lease is lost; its reason is a LeaseLost error. */
  readonly signal: AbortSignal;
  /** Gives the lease up (only if still ours: a lapsed lease may belong to someone else by now). */
  release(): Promise<void>;
}

export interface LeaseOptions {
  /** How long to wait for a busy lease before giving up (0 = try once). */
  waitMs: number;
  /** Lease length; renewed every third of it while held. */
  ttlMs: number;
}

export class LeaseLost extends Error {
  /** taken: a renewal found another owner; lapsed: no renewal was confirmed within the lease. */
  readonly how: 'taken' | 'lapsed';
  constructor(name: string, how: 'taken' | 'lapsed') {
    super(`lease ${how}: ${name}`);
    this.name = 'LeaseLost';
    this.how = how;
  }
}

const POLL_MS = 50;

/** Released leases remembered for a reconnection at most (beyond, the oldest lapse by their ttl). */
const MAX_RELEASED = 10_000;

export class Leases {
  readonly state: SharedState;
  /** Leases given up within their ttl, by name and owner: dropped again after a reconnection. */
  private readonly released = new Map<string, { name: string; owner: string; until: number }>();

  constructor(state: SharedState) {
    this.state = state;
    // After a Sentinel failover the drops sent to the old primary just before it was demoted may be
    // gone (replication is asynchronous) while the takes they undid were replicated: the new primary
    // then holds a lease nobody holds, and every waiter for it waits out its ttl (a quota settle of
    // the key, so uploads got 507 for seconds after the failover). A drop only removes a lease that
    // still has its owner's token, so sending it again is safe.
    state.onReconnect(() => void this.dropAgain());
  }

  private remember(name: string, owner: string, ttlMs: number): void {
    const now = Date.now();
    // By owner too: a later holder of the name does not hide an earlier release that was lost.
    this.released.set(`${name}\n${owner}`, { name, owner, until: now + ttlMs });
    for (const [k, r] of this.released) {
      if (r.until > now && this.released.size <= MAX_RELEASED) break;
      this.released.delete(k);
    }
  }

  private async dropAgain(): Promise<void> {
    const now = Date.now();
    for (const [k, r] of [...this.released]) {
      this.released.delete(k);
      if (r.until > now) await this.state.dropLease(r.name, r.owner).catch(() => {});
    }
  }

  /** The held lease, or null when someone else still holds it after `waitMs`. Store errors reject. */
  async acquire(name: string, o: LeaseOptions): Promise<HeldLease | null> {
    const owner = randomBytes(12).toString('base64url');
    const until = Date.now() + o.waitMs;
    let takenAt = Date.now();
    while (!(await this.state.takeLease(name, owner, o.ttlMs))) {
      if (Date.now() >= until) return null;
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, until - Date.now()))));
      takenAt = Date.now();
    }
    const ac = new AbortController();
    // The lease is ours until `confirmed + ttlMs` by our clock; the sent time of a renewal counts, so
    // a slow answer never extends it past what the server granted.
    let confirmed = takenAt;
    let released = false;
    const lose = (how: 'taken' | 'lapsed') => {
      if (released || ac.signal.aborted) return;
      clearInterval(timer);
      clearTimeout(deadline);
      ac.abort(new LeaseLost(name, how));
    };
    // Our clock says the grant ran out. On a loaded machine that is often only our timers running
    // late (the renewal's answer was there, the timer ran first): ask the store once. A lease the
    // store still gives us was nobody else's meanwhile; one it does not (or no answer) is lost.
    const lapse = () => {
      const sent = Date.now();
      // A store that does not answer within a third of the lease is not vouching for it.
      const silent = setTimeout(() => lose('lapsed'), o.ttlMs / 3);
      silent.unref();
      this.state.renewLease(name, owner, o.ttlMs).then(
        (ok) => {
          clearTimeout(silent);
          if (ok) granted(sent);
          else lose('lapsed');
        },
        () => {
          clearTimeout(silent);
          lose('lapsed');
        },
      );
    };
    const granted = (sent: number) => {
      if (released || ac.signal.aborted) return;
      confirmed = sent;
      clearTimeout(deadline);
      deadline = setTimeout(lapse, Math.max(0, confirmed + o.ttlMs - Date.now()));
      deadline.unref();
    };
    // Lost for sure once the last confirmed grant has run out without a new one.
    let deadline = setTimeout(lapse, o.ttlMs);
    deadline.unref();
    const timer = setInterval(() => {
      const sent = Date.now();
      this.state.renewLease(name, owner, o.ttlMs).then(
        (ok) => {
          if (released || ac.signal.aborted) return;
          if (!ok) return lose('taken');
          granted(sent);
        },
        () => {}, // unreachable store: the deadline decides
      );
    }, o.ttlMs / 3);
    timer.unref();
    return {
      signal: ac.signal,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        clearTimeout(deadline);
        this.remember(name, owner, o.ttlMs);
        await this.state.dropLease(name, owner).catch(() => {});
      },
    };
  }
}

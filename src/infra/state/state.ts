// The shared-state layer under every limit: the few primitives the policies use (expiring counters,
// TTL flags, leases, reservation pools with a ledger, and for the admin usage counts expiring hashes
// and bounded rankings), kept in this process (memory.ts) or in Redis
// (redis-state.ts, every instance on one Redis shares them). Policies (rate limits, byte budgets, the
// files quota, download counts, upload locks, Telegram pauses) are written once on top of this
// interface; only redis-state.ts knows Redis commands or Lua. tests: state.test.ts runs the same
// contract against both.
import type { Redis } from 'ioredis';

export interface CountOptions {
  /** A key created by this call lives this long (fixed windows that start with their first hit). */
  ttlMs?: number;
  /** The key lives until this epoch ms (windows aligned to the clock; set on every call). */
  expireAt?: number;
  /** Adds only while the result stays at or below `max`; otherwise the value is left as it is. */
  max?: number;
}

export interface CountResult {
  /** The value after this call (unchanged when refused). */
  value: number;
  /** Milliseconds the key has left (-1: no expiry). */
  ttlMs: number;
  /** False when `max` refused the addition. */
  ok: boolean;
}

/** One line of a pool's ledger: what `key` holds now (null: nothing, the line goes). */
export interface LedgerLine {
  key: string;
  size: number | null;
}

export type ReserveResult = 'ok' | 'full' | 'unknown';

export interface PoolUsage {
  /** The ledger's sum, or null while the pool has not been counted (poolInit). */
  settled: number | null;
  /** Live reservations together. */
  reserved: number;
}

export interface SharedState {
  readonly kind: 'memory' | 'redis';

  /** Adds `by` to counter `key` (created at 0), atomically. */
  count(key: string, by: number, o: CountOptions): Promise<CountResult>;
  /** Adds to several counters in one round trip; resolves with their new values. */
  countMany(entries: readonly { key: string; by: number; expireAt: number }[]): Promise<number[]>;
  /** Current values (0 when absent or expired). */
  counters(keys: readonly string[]): Promise<number[]>;
  /** Removes counters. */
  forget(keys: readonly string[]): Promise<void>;

  /** Sets flag `key` for `ttlMs`. */
  setFlag(key: string, ttlMs: number, value?: string): Promise<void>;
  /** The flag's value and remaining life, or null when it is not set. */
  flag(key: string): Promise<{ value: string; ttlMs: number } | null>;

  /** Takes lease `name` for `owner` when it is free: true. */
  takeLease(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease when `owner` still holds it: true; false means it was lost. */
  renewLease(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if `owner` still holds it. */
  dropLease(name: string, owner: string): Promise<void>;

  /**
   * Sets reservation `id` of `pool` to `bytes` (not adds: a growing reservation names its new total)
   * when the ledger plus every live reservation, this one at its new size, stays within `limit`.
   * 'unknown' while the pool has no ledger yet (poolInit counts it).
   */
  reserve(pool: string, id: string, bytes: number, limit: number, ttlMs: number): Promise<ReserveResult>;
  /**
   * Writes ledger lines (each replaces what the ledger said about its key) and drops reservation
   * `id` (null: none), atomically. Idempotent: repeating a settle changes nothing.
   */
  settle(pool: string, id: string | null, lines: readonly LedgerLine[]): Promise<void>;
  /** Extends live reservations; resolves with the ids that were no longer there (lapsed, or lost with Redis). */
  keep(pool: string, ids: readonly string[], ttlMs: number): Promise<string[]>;
  poolUsage(pool: string): Promise<PoolUsage>;
  /** Every ledger line of `pool`. */
  poolLedger(pool: string): Promise<Map<string, number>>;
  /** Replaces the ledger by a fresh count (reservations stay). */
  poolInit(pool: string, ledger: ReadonlyMap<string, number>): Promise<void>;

  /** Adds to numeric fields of each hash (created empty), which then lives `ttlMs` more. */
  hashAdd(
    entries: readonly { key: string; fields: Readonly<Record<string, number>>; ttlMs: number }[],
  ): Promise<void>;
  /** Sets text fields of a hash, which then lives `ttlMs` more. */
  hashSet(key: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void>;
  /** Every field of each hash ({} when absent). */
  hashGet(keys: readonly string[]): Promise<Record<string, string>[]>;
  hashDel(key: string, fields: readonly string[]): Promise<void>;
  /**
   * Adds to members' scores in each ranking, keeps its `keep` highest members (bounded whatever
   * the members are), and lets it live `ttlMs` more.
   */
  rankAdd(
    entries: readonly { key: string; members: readonly [string, number][]; keep: number; ttlMs: number }[],
  ): Promise<void>;
  /** The `n` highest members of each ranking with their scores, highest first. */
  rankTop(keys: readonly { key: string; n: number }[]): Promise<[string, number][][]>;

  /**
   * Calls `fn` each time the shared store is reached again after its connection was lost or moved
   * (a Sentinel failover): the last writes made before may be gone (Redis replicates
   * asynchronously), so a policy that cannot afford that writes them again. Never for memory.
   */
  onReconnect(fn: () => void): void;

  close(): Promise<void>;
}

/** The layer on the shared Redis when there is one, else in this process. */
export async function createState(redis: Redis | null, keyPrefix: string): Promise<SharedState> {
  if (!redis) {
    const { MemoryState } = await import('./memory.ts');
    return new MemoryState();
  }
  const { RedisState } = await import('./redis-state.ts');
  return new RedisState(redis, keyPrefix);
}

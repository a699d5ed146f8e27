// Byte budgets per client key and in total over fixed UTC windows (an hour, a day, a month), on the
// shared state's counters so that every instance draws from one budget. The reverse proxy and the
// relay check a budget before they start a transfer and charge the bytes as they move (in batches:
// one store write per MiB or second); a transfer that goes past the client's budget by more than
// CUT_MARGIN is cut (over()), and the next one is refused with 429 until the window ends.
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { type Budget, budgetText } from '../config/schema.ts';
import { addressGroup } from '../http/client-ip.ts';
import type { Metrics } from '../observe/metrics.ts';
import type { SharedState } from '../state/state.ts';

const DAY = 86_400_000;
const UNIT_MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: DAY, week: 7 * DAY } as const;
// Weeks start on Monday; 1970-01-01 was a Thursday.
const FIRST_MONDAY = 4 * DAY;
// Keys outlive their window a little, so instances whose clocks disagree slightly still meet.
const KEY_SLACK_MS = 120_000;
/**
 * How far past its budget a running transfer may go before it is cut. Charges are batched per MiB,
 * so a single transfer is cut within about CUT_MARGIN + 1 MiB past the budget (parallel transfers of
 * one client on several instances see each other's bytes once they are flushed, within a second).
 */
export const CUT_MARGIN = 1024 * 1024;

export interface Window {
  id: string;
  endMs: number;
}

/** The fixed window `now` falls in: epoch-aligned multiples of the unit, calendar months in UTC. */
export function windowOf(b: Pick<Budget, 'count' | 'unit'>, now: number): Window {
  if (b.unit === 'month') {
    const d = new Date(now);
    const idx = Math.floor((d.getUTCFullYear() * 12 + d.getUTCMonth()) / b.count);
    const end = (idx + 1) * b.count;
    return { id: `month${b.count}-${idx}`, endMs: Date.UTC(Math.floor(end / 12), end % 12, 1) };
  }
  const len = UNIT_MS[b.unit] * b.count;
  const offset = b.unit === 'week' ? FIRST_MONDAY : 0;
  const idx = Math.floor((now - offset) / len);
  return { id: `${b.unit}${b.count}-${idx}`, endMs: offset + (idx + 1) * len };
}

export type Scope = 'client' | 'total';

export interface BudgetDecision {
  allowed: boolean;
  /** The spent budget, when refused (the one that frees last if both are spent). */
  scope?: Scope;
  /** Seconds until the spent window ends (0 when allowed). */
  retryAfterSec: number;
}

/** The store failed and the fail mode is closed: callers answer "unavailable". */
export class BudgetUnavailableError extends Error {}

export interface ByteBudgetOptions {
  client: Budget;
  total: Budget;
  state: SharedState;
  failMode: 'open' | 'closed';
  logger: Logger;
  /** IPv6 clients are one client per network of this prefix length (default 64). */
  v6Bits?: number;
  /** Unflushed bytes that trigger a write to the store (default 1 MiB). */
  flushBytes?: number;
  /** Longest time charged bytes wait before they are written (default 1 s). */
  flushMs?: number;
}

interface Part {
  scope: Scope;
  key: string;
  limit: number;
  endMs: number;
}

export class ByteBudget {
  readonly name: string;
  readonly client: Budget;
  readonly total: Budget;
  /** What this instance refused and charged (metrics, status). */
  readonly refused = { client: 0, total: 0 };
  charged = 0;
  private readonly o: ByteBudgetOptions;
  // Charges are batched: one store write per flushBytes or flushMs, and on flush() (end of a transfer).
  private pending = new Map<string, { n: number; expireAt: number }>();
  private pendingBytes = 0;
  /**
   * Bytes of flushes on their way to the store: counted by check() and over() until the write
   * lands, so a request that arrives during a flush does not see them vanish for a round trip.
   */
  private inflight = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private lastTotal = { key: '', used: 0 };
  /** The store's count of each key as last read or written (over() adds the unflushed bytes). */
  private seen = new Map<string, number>();
  private failing = false;
  private readonly byIp = new Map<string, { parts: readonly Part[]; from: number; until: number }>();

  constructor(name: string, o: ByteBudgetOptions) {
    this.name = name;
    this.client = o.client;
    this.total = o.total;
    this.o = o;
  }

  get enabled(): boolean {
    return this.client.bytes > 0 || this.total.bytes > 0;
  }

  /**
   * The keys and limits charged for these clients now. One address's are kept while their windows
   * last: the fast lane asks twice per answer (admitsNow, charge), and building them (the address
   * group, the window ids, the keys) cost more than the rest of the check.
   */
  private parts(ips: string | readonly string[], now: number): readonly Part[] {
    if (typeof ips !== 'string') return this.build(ips, now);
    const c = this.byIp.get(ips);
    // [from, until) lies inside every window of the parts: any now there names the same windows.
    if (c && now >= c.from && now < c.until) return c.parts;
    const parts = this.build([ips], now);
    if (this.byIp.size >= 1000) this.byIp.clear();
    this.byIp.set(ips, { parts, from: now, until: Math.min(...parts.map((p) => p.endMs)) });
    return parts;
  }

  private build(ips: readonly string[], now: number): Part[] {
    const out: Part[] = [];
    if (this.client.bytes > 0) {
      const w = windowOf(this.client, now);
      for (const c of new Set(ips.map((ip) => addressGroup(ip, this.o.v6Bits))))
        out.push({
          scope: 'client',
          key: `bb:${this.name}:c:${c}:${w.id}`,
          limit: this.client.bytes,
          endMs: w.endMs,
        });
    }
    if (this.total.bytes > 0) {
      const w = windowOf(this.total, now);
      out.push({
        scope: 'total',
        key: `bb:${this.name}:total:${w.id}`,
        limit: this.total.bytes,
        endMs: w.endMs,
      });
    }
    return out;
  }

  /** May these clients (one address, or both ends of a relay session) start a transfer? */
  async check(ips: string | readonly string[], now = Date.now()): Promise<BudgetDecision> {
    const parts = this.parts(ips, now);
    if (parts.length === 0) return { allowed: true, retryAfterSec: 0 };
    let values: number[];
    try {
      values = await this.o.state.counters(parts.map((p) => p.key));
      this.failing = false;
    } catch (err) {
      this.storeFailed(err);
      if (this.o.failMode === 'open') return { allowed: true, retryAfterSec: 0 };
      throw new BudgetUnavailableError(`byte budget store unavailable: ${(err as Error).message}`);
    }
    let refused: Part | undefined;
    parts.forEach((p, i) => {
      this.remember(p.key, values[i] ?? 0);
      const used = (values[i] ?? 0) + this.unwritten(p.key);
      if (p.scope === 'total') this.lastTotal = { key: p.key, used: values[i] ?? 0 };
      if (used >= p.limit && (!refused || p.endMs > refused.endMs)) refused = p;
    });
    if (!refused) return { allowed: true, retryAfterSec: 0 };
    this.refused[refused.scope]++;
    return {
      allowed: false,
      scope: refused.scope,
      retryAfterSec: Math.max(1, Math.ceil((refused.endMs - now) / 1000)),
    };
  }

  /** Charges n bytes to each of these clients (counted once per client) and once to the total. */
  charge(ips: string | readonly string[], n: number, now = Date.now()): void {
    if (n <= 0 || !this.enabled) return;
    this.charged += n;
    for (const p of this.parts(ips, now)) {
      const e = this.pending.get(p.key);
      if (e) e.n += n;
      else this.pending.set(p.key, { n, expireAt: p.endMs + KEY_SLACK_MS });
    }
    this.pendingBytes += n;
    if (this.pendingBytes >= (this.o.flushBytes ?? 1024 * 1024)) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.o.flushMs ?? 1000);
      this.timer.unref();
    }
  }

  /** Writes every pending charge to the store; never rejects (failed charges are kept for later). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    const batch = [...this.pending].map(([key, v]) => ({ key, ...v }));
    this.pending = new Map();
    this.pendingBytes = 0;
    for (const e of batch) this.inflight.set(e.key, (this.inflight.get(e.key) ?? 0) + e.n);
    let values: number[] | null = null;
    try {
      values = await this.o.state.countMany(
        batch.map((e) => ({ key: e.key, by: e.n, expireAt: e.expireAt })),
      );
    } catch (err) {
      this.storeFailed(err);
    }
    for (const e of batch) {
      const left = (this.inflight.get(e.key) ?? 0) - e.n;
      if (left > 0) this.inflight.set(e.key, left);
      else this.inflight.delete(e.key);
    }
    if (values) {
      this.failing = false;
      batch.forEach((e, i) => {
        this.remember(e.key, values[i] ?? 0);
        if (e.key.startsWith(`bb:${this.name}:total:`)) this.lastTotal = { key: e.key, used: values[i] ?? 0 };
      });
      return;
    }
    for (const e of batch) this.charge0(e.key, e.n, e.expireAt);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.o.flushMs ?? 1000);
      this.timer.unref();
    }
  }

  /** This instance's bytes for a key that the store does not count yet (pending or in flight). */
  private unwritten(key: string): number {
    return (this.pending.get(key)?.n ?? 0) + (this.inflight.get(key) ?? 0);
  }

  /**
   * Whether these clients went past their budget by more than CUT_MARGIN: the store's count as
   * last seen plus this instance's unwritten bytes. A transfer that is over is cut by its caller.
   */
  over(ips: string | readonly string[], now = Date.now()): boolean {
    for (const p of this.parts(ips, now)) {
      const used = (this.seen.get(p.key) ?? 0) + this.unwritten(p.key);
      if (used > p.limit + CUT_MARGIN) return true;
    }
    return false;
  }

  /**
   * check() without the store: allowed when every count this instance last saw (read or written),
   * plus its unwritten bytes, is below its limit. False when one is unknown (a new window, a new
   * client): the caller then asks check(). The fast lane's answers charge as they go and their
   * batched writes bring the counts back. With a store several instances share (Redis) what the
   * others spent is not seen in time: there it is always false, as the rate limiter's takeNow.
   */
  admitsNow(ips: string | readonly string[], now = Date.now()): boolean {
    if (this.failing || this.o.state.kind !== 'memory') return false;
    for (const p of this.parts(ips, now)) {
      const seen = this.seen.get(p.key);
      if (seen === undefined || seen + this.unwritten(p.key) >= p.limit) return false;
    }
    return true;
  }

  /** Keeps the last count of a key; bounded by the keys of live windows (old ones are dropped). */
  private remember(key: string, used: number): void {
    if (this.seen.size > 10_000) this.seen.clear();
    this.seen.set(key, Math.max(used, this.seen.get(key) ?? 0));
  }

  private charge0(key: string, n: number, expireAt: number): void {
    const e = this.pending.get(key);
    if (e) e.n += n;
    else this.pending.set(key, { n, expireAt });
    this.pendingBytes += n;
  }

  private storeFailed(err: unknown): void {
    if (!this.failing)
      this.o.logger.warn(
        { err: { message: (err as Error).message }, budget: this.name },
        'byte budget store failed',
      );
    this.failing = true;
  }

  /** Re-reads the total window's usage from the store (metrics scrape). */
  async refresh(now = Date.now()): Promise<void> {
    const p = this.parts([], now).find((x) => x.scope === 'total');
    if (!p) return;
    try {
      const [v] = await this.o.state.counters([p.key]);
      this.lastTotal = { key: p.key, used: v ?? 0 };
    } catch (err) {
      this.storeFailed(err);
    }
  }

  /** The total budget as last seen (the store's count plus this instance's unflushed bytes). */
  usage(now = Date.now()): { used: number; limit: number; resetsInSec: number } | null {
    const p = this.parts([], now).find((x) => x.scope === 'total');
    if (!p) return null;
    const seen = this.lastTotal.key === p.key ? this.lastTotal.used : 0;
    return {
      used: seen + this.unwritten(p.key),
      limit: p.limit,
      resetsInSec: Math.ceil((p.endMs - now) / 1000),
    };
  }

  /** A one-line reason for a refusal, naming the budget but not the client. */
  reason(d: BudgetDecision): string {
    return d.scope === 'total'
      ? `the ${this.name} byte budget (${budgetText(this.total)}) is spent; retry in ${d.retryAfterSec}s`
      : `your address has used its ${this.name} byte budget (${budgetText(this.client)}); retry in ${d.retryAfterSec}s`;
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** A budget on the shared state (Redis when configured, else this process). */
export function createByteBudget(
  name: string,
  limits: { client: Budget; total: Budget },
  deps: { state: SharedState; failMode: 'open' | 'closed'; logger: Logger; v6Bits: number },
): ByteBudget {
  return new ByteBudget(name, { ...limits, ...deps });
}

const registered = new WeakMap<Metrics, Set<ByteBudget>>();

/**
 * Exposes budgets in /metrics: limits, the shared total usage of the current window (read from the
 * store at scrape time), and this instance's charged bytes and refusals. Per-client usage is left
 * out on purpose: one series per address would grow without bound.
 */
export function budgetMetrics(metrics: Metrics, budget: ByteBudget): () => void {
  let set = registered.get(metrics);
  if (!set) {
    const all = new Set<ByteBudget>();
    set = all;
    registered.set(metrics, all);
    const registers = [metrics.registry];
    new Gauge({
      name: 'devutil_budget_limit_bytes',
      help: 'byte budget per window (0 = none)',
      labelNames: ['budget', 'scope'],
      registers,
      collect() {
        for (const b of all) {
          this.set({ budget: b.name, scope: 'client' }, b.client.bytes);
          this.set({ budget: b.name, scope: 'total' }, b.total.bytes);
        }
      },
    });
    new Gauge({
      name: 'devutil_budget_used_bytes',
      help: 'bytes used of the total budget in the current window (all instances)',
      labelNames: ['budget'],
      registers,
      async collect() {
        await Promise.all([...all].map((b) => b.refresh()));
        for (const b of all) this.set({ budget: b.name }, b.usage()?.used ?? 0);
      },
    });
    new Counter({
      name: 'devutil_budget_charged_bytes_total',
      help: 'bytes charged to byte budgets by this instance',
      labelNames: ['budget'],
      registers,
      collect() {
        this.reset();
        for (const b of all) this.inc({ budget: b.name }, b.charged);
      },
    });
    new Counter({
      name: 'devutil_budget_refused_total',
      help: 'transfers refused because a byte budget was spent',
      labelNames: ['budget', 'scope'],
      registers,
      collect() {
        this.reset();
        for (const b of all) {
          this.inc({ budget: b.name, scope: 'client' }, b.refused.client);
          this.inc({ budget: b.name, scope: 'total' }, b.refused.total);
        }
      },
    });
  }
  set.add(budget);
  return () => set.delete(budget);
}

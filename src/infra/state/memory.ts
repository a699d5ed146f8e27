// The shared-state primitives in this process alone (no Redis): one instance, or every worker
// counting for itself. Expired entries are swept so memory stays bounded by live keys.
import type {
  CountOptions,
  CountResult,
  LedgerLine,
  PoolUsage,
  ReserveResult,
  SharedState,
} from './state.ts';

interface Timed {
  expireAt: number; // Infinity = no expiry
}

interface Pool {
  ledger: Map<string, number>;
  settled: number | null;
  res: Map<string, { bytes: number } & Timed>;
}

const left = (t: Timed, now: number) => (t.expireAt === Number.POSITIVE_INFINITY ? -1 : t.expireAt - now);

export class MemoryState implements SharedState {
  readonly kind = 'memory';
  private readonly nums = new Map<string, { n: number } & Timed>();
  private readonly flags = new Map<string, { value: string } & Timed>();
  private readonly leases = new Map<string, { owner: string } & Timed>();
  private readonly pools = new Map<string, Pool>();
  private readonly hashes = new Map<string, { fields: Map<string, string> } & Timed>();
  private readonly ranks = new Map<string, { scores: Map<string, number> } & Timed>();
  private readonly timer: NodeJS.Timeout;

  constructor(sweepMs = 30_000) {
    this.timer = setInterval(() => this.sweep(), sweepMs);
    this.timer.unref();
  }

  private live<T extends Timed>(map: Map<string, T>, key: string, now: number): T | undefined {
    const v = map.get(key);
    if (v && v.expireAt <= now) {
      map.delete(key);
      return undefined;
    }
    return v;
  }

  async count(key: string, by: number, o: CountOptions): Promise<CountResult> {
    const now = Date.now();
    let v = this.live(this.nums, key, now);
    const cur = v?.n ?? 0;
    if (o.max !== undefined && cur + by > o.max)
      return { value: cur, ttlMs: v ? left(v, now) : -1, ok: false };
    if (!v) {
      v = { n: 0, expireAt: o.ttlMs !== undefined ? now + o.ttlMs : Number.POSITIVE_INFINITY };
      this.nums.set(key, v);
    }
    if (o.expireAt !== undefined) v.expireAt = o.expireAt;
    v.n += by;
    return { value: v.n, ttlMs: left(v, now), ok: true };
  }

  async countMany(entries: readonly { key: string; by: number; expireAt: number }[]): Promise<number[]> {
    const out: number[] = [];
    for (const e of entries) out.push((await this.count(e.key, e.by, { expireAt: e.expireAt })).value);
    return out;
  }

  async counters(keys: readonly string[]): Promise<number[]> {
    const now = Date.now();
    return keys.map((k) => this.live(this.nums, k, now)?.n ?? 0);
  }

  async forget(keys: readonly string[]): Promise<void> {
    for (const k of keys) this.nums.delete(k);
  }

  async setFlag(key: string, ttlMs: number, value = '1'): Promise<void> {
    this.flags.set(key, { value, expireAt: Date.now() + Math.max(1, ttlMs) });
  }

  async flag(key: string): Promise<{ value: string; ttlMs: number } | null> {
    const now = Date.now();
    const f = this.live(this.flags, key, now);
    return f ? { value: f.value, ttlMs: f.expireAt - now } : null;
  }

  async takeLease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if (this.live(this.leases, name, now)) return false;
    this.leases.set(name, { owner, expireAt: now + ttlMs });
    return true;
  }

  async renewLease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const l = this.live(this.leases, name, now);
    if (l?.owner !== owner) return false;
    l.expireAt = now + ttlMs;
    return true;
  }

  async dropLease(name: string, owner: string): Promise<void> {
    if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
  }

  private pool(name: string): Pool {
    let p = this.pools.get(name);
    if (!p) {
      p = { ledger: new Map(), settled: null, res: new Map() };
      this.pools.set(name, p);
    }
    return p;
  }

  private reservedBy(p: Pool, now: number): number {
    let sum = 0;
    for (const [id, r] of p.res) {
      if (r.expireAt <= now) p.res.delete(id);
      else sum += r.bytes;
    }
    return sum;
  }

  async reserve(
    pool: string,
    id: string,
    bytes: number,
    limit: number,
    ttlMs: number,
  ): Promise<ReserveResult> {
    const p = this.pool(pool);
    if (p.settled === null) return 'unknown';
    const now = Date.now();
    const others = this.reservedBy(p, now) - (p.res.get(id)?.bytes ?? 0);
    if (p.settled + others + bytes > limit) return 'full';
    p.res.set(id, { bytes, expireAt: now + ttlMs });
    return 'ok';
  }

  async settle(pool: string, id: string | null, lines: readonly LedgerLine[]): Promise<void> {
    const p = this.pool(pool);
    for (const { key, size } of lines) {
      const old = p.ledger.get(key) ?? 0;
      if (size === null) p.ledger.delete(key);
      else p.ledger.set(key, size);
      if (p.settled !== null) p.settled += (size ?? 0) - old;
    }
    if (id !== null) p.res.delete(id);
  }

  async keep(pool: string, ids: readonly string[], ttlMs: number): Promise<string[]> {
    const p = this.pool(pool);
    const now = Date.now();
    const lost: string[] = [];
    for (const id of ids) {
      const r = this.live(p.res, id, now);
      if (r) r.expireAt = now + ttlMs;
      else lost.push(id);
    }
    return lost;
  }

  async poolUsage(pool: string): Promise<PoolUsage> {
    const p = this.pool(pool);
    return { settled: p.settled, reserved: this.reservedBy(p, Date.now()) };
  }

  async poolLedger(pool: string): Promise<Map<string, number>> {
    return new Map(this.pool(pool).ledger);
  }

  async poolInit(pool: string, ledger: ReadonlyMap<string, number>): Promise<void> {
    const p = this.pool(pool);
    p.ledger = new Map(ledger);
    p.settled = [...ledger.values()].reduce((a, b) => a + b, 0);
  }

  private hash(key: string, ttlMs: number): Map<string, string> {
    const now = Date.now();
    let h = this.live(this.hashes, key, now);
    if (!h) {
      h = { fields: new Map(), expireAt: 0 };
      this.hashes.set(key, h);
    }
    h.expireAt = now + ttlMs;
    return h.fields;
  }

  async hashAdd(
    entries: readonly { key: string; fields: Readonly<Record<string, number>>; ttlMs: number }[],
  ): Promise<void> {
    for (const e of entries) {
      const h = this.hash(e.key, e.ttlMs);
      for (const [f, n] of Object.entries(e.fields)) h.set(f, String(Number(h.get(f) ?? 0) + n));
    }
  }

  async hashSet(key: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    const h = this.hash(key, ttlMs);
    for (const [f, v] of Object.entries(fields)) h.set(f, v);
  }

  async hashGet(keys: readonly string[]): Promise<Record<string, string>[]> {
    const now = Date.now();
    return keys.map((k) => Object.fromEntries(this.live(this.hashes, k, now)?.fields ?? []));
  }

  async hashDel(key: string, fields: readonly string[]): Promise<void> {
    const h = this.live(this.hashes, key, Date.now());
    for (const f of fields) h?.fields.delete(f);
  }

  async rankAdd(
    entries: readonly { key: string; members: readonly [string, number][]; keep: number; ttlMs: number }[],
  ): Promise<void> {
    const now = Date.now();
    for (const e of entries) {
      let r = this.live(this.ranks, e.key, now);
      if (!r) {
        r = { scores: new Map(), expireAt: 0 };
        this.ranks.set(e.key, r);
      }
      r.expireAt = now + e.ttlMs;
      for (const [m, n] of e.members) r.scores.set(m, (r.scores.get(m) ?? 0) + n);
      if (r.scores.size > e.keep)
        r.scores = new Map([...r.scores].sort((x, y) => y[1] - x[1]).slice(0, e.keep));
    }
  }

  async rankTop(keys: readonly { key: string; n: number }[]): Promise<[string, number][][]> {
    const now = Date.now();
    return keys.map(({ key, n }) =>
      [...(this.live(this.ranks, key, now)?.scores ?? [])].sort((x, y) => y[1] - x[1]).slice(0, n),
    );
  }

  private sweep(): void {
    const now = Date.now();
    for (const map of [this.nums, this.flags, this.leases, this.hashes, this.ranks] as Map<string, Timed>[])
      for (const [k, v] of map) if (v.expireAt <= now) map.delete(k);
    for (const p of this.pools.values()) this.reservedBy(p, now);
  }

  onReconnect(): void {} // nothing to lose: the state lives and dies with the process

  async close(): Promise<void> {
    clearInterval(this.timer);
  }
}

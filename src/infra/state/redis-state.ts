// The shared-state primitives on Redis, shared by every instance that uses the same Redis and key
// prefix. Each operation is one round trip and atomic (a Lua script where it reads before it
// writes); the scripts live here and nowhere else. Expiry of reservations is decided by Redis's
// clock (TIME), so instances whose clocks differ agree on it. Every write is idempotent or a plain
// addition, so a command that timed out on the client but ran on the server does no harm when the
// caller retries it (settles, reservations, flags) or is only an over-count (counters).
import type { Redis } from 'ioredis';
import { failingOver } from './redis.ts';
import type {
  CountOptions,
  CountResult,
  LedgerLine,
  PoolUsage,
  ReserveResult,
  SharedState,
} from './state.ts';

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: counter. ARGV: by, max (-1 none), ttl (-1 none), expireAt (-1 none).
const COUNT = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local by = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
if max >= 0 and v + by > max then return {v, redis.call('PTTL', KEYS[1]), 0} end
v = redis.call('INCRBY', KEYS[1], by)
local at = tonumber(ARGV[4])
if at >= 0 then redis.call('PEXPIREAT', KEYS[1], at)
elseif tonumber(ARGV[3]) >= 0 and redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {v, redis.call('PTTL', KEYS[1]), 1}`;

const PURGE = `for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do redis.call('HDEL', KEYS[3], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local reserved = 0
for _, b in ipairs(redis.call('HVALS', KEYS[3])) do reserved = reserved + tonumber(b) end`;

// Pool KEYS: sum, ledger, reservations (id -> bytes), expiries (id -> ms).
// ARGV: id, bytes, limit, ttl. Returns 1 ok, 0 full, -1 unknown (no ledger yet).
const RESERVE = `${NOW}
local sum = redis.call('GET', KEYS[1])
if not sum then return -1 end
${PURGE}
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if tonumber(sum) + reserved - cur + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[4]), ARGV[1])
return 1`;

// ARGV: id ('' = none), then key, size ('' = gone) pairs.
const SETTLE = `local delta = 0
for i = 2, #ARGV, 2 do
  local old = tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0')
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[2], ARGV[i])
    delta = delta - old
  else
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
    delta = delta + tonumber(ARGV[i + 1]) - old
  end
end
if delta ~= 0 and redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCRBY', KEYS[1], delta) end
if ARGV[1] ~= '' then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
return 1`;

// ARGV: ttl, ids... Returns the ids no longer live.
const KEEP = `${NOW}
local lost = {}
for i = 2, #ARGV do
  local at = redis.call('ZSCORE', KEYS[4], ARGV[i])
  if at and tonumber(at) > now then redis.call('ZADD', KEYS[4], now + tonumber(ARGV[1]), ARGV[i])
  else table.insert(lost, ARGV[i]) end
end
return lost`;

const USAGE = `${NOW}
${PURGE}
return {redis.call('GET', KEYS[1]) or '', reserved}`;

// Compare-and-act: only the owner's token renews or drops its lease.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const DROP = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const FLAG = `local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}`;

type PoolKeys = [string, string, string, string];

interface Scripts {
  stCount(k: string, by: number, max: number, ttl: number, at: number): Promise<[number, number, number]>;
  stReserve(...a: [...PoolKeys, string, number, number, number]): Promise<number>;
  stSettle(...a: (string | number)[]): Promise<number>;
  stKeep(...a: (string | number)[]): Promise<string[]>;
  stUsage(...a: PoolKeys): Promise<[string, number]>;
  stRenew(k: string, owner: string, ttl: number): Promise<number>;
  stDrop(k: string, owner: string): Promise<number>;
  stFlag(k: string): Promise<[string, number] | null>;
}

const SCRIPTS: [keyof Scripts, number, string][] = [
  ['stCount', 1, COUNT],
  ['stReserve', 4, RESERVE],
  ['stSettle', 4, SETTLE],
  ['stKeep', 4, KEEP],
  ['stUsage', 4, USAGE],
  ['stRenew', 1, RENEW],
  ['stDrop', 1, DROP],
  ['stFlag', 1, FLAG],
];

/** Ledger lines written per command when a pool is counted afresh. */
const INIT_BATCH = 1000;

export class RedisState implements SharedState {
  readonly kind = 'redis';
  private readonly redis: Redis & Scripts;
  private readonly prefix: string;

  private readonly reconnected: (() => void)[] = [];

  constructor(redis: Redis, keyPrefix: string) {
    for (const [name, numberOfKeys, lua] of SCRIPTS) redis.defineCommand(name, { numberOfKeys, lua });
    this.redis = redis as Redis & Scripts;
    this.prefix = keyPrefix;
    // The first 'ready' of a client still connecting is its first connection, not a reconnection.
    let connected = redis.status === 'ready';
    redis.on('ready', () => {
      if (connected) for (const fn of this.reconnected) fn();
      connected = true;
    });
  }

  onReconnect(fn: () => void): void {
    this.reconnected.push(fn);
  }

  private c = (key: string) => `${this.prefix}c:${key}`;
  private pk(pool: string): PoolKeys {
    const p = `${this.prefix}p:${pool}:`;
    return [`${p}sum`, `${p}ledger`, `${p}res`, `${p}exp`];
  }

  async count(key: string, by: number, o: CountOptions): Promise<CountResult> {
    const [value, ttlMs, ok] = await this.redis.stCount(
      this.c(key),
      by,
      o.max ?? -1,
      o.ttlMs ?? -1,
      o.expireAt ?? -1,
    );
    return { value: Number(value), ttlMs: Number(ttlMs) < 0 ? -1 : Number(ttlMs), ok: Number(ok) === 1 };
  }

  async countMany(entries: readonly { key: string; by: number; expireAt: number }[]): Promise<number[]> {
    if (entries.length === 0) return [];
    const m = this.redis.multi();
    for (const e of entries) m.incrby(this.c(e.key), e.by).pexpireat(this.c(e.key), e.expireAt);
    const res = (await m.exec()) ?? [];
    return entries.map((_, i) => {
      const [err, v] = res[2 * i] ?? [new Error('no reply'), 0];
      if (err) throw err;
      return Number(v);
    });
  }

  async counters(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const got = await this.redis.mget(...keys.map(this.c));
    return got.map((v) => Number(v ?? 0));
  }

  async forget(keys: readonly string[]): Promise<void> {
    if (keys.length) await this.redis.del(...keys.map(this.c));
  }

  async setFlag(key: string, ttlMs: number, value = '1'): Promise<void> {
    await this.redis.set(`${this.prefix}f:${key}`, value, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async flag(key: string): Promise<{ value: string; ttlMs: number } | null> {
    const r = await this.redis.stFlag(`${this.prefix}f:${key}`);
    return r ? { value: String(r[0]), ttlMs: Number(r[1]) } : null;
  }

  async takeLease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}l:${name}`, owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async renewLease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return Number(await this.redis.stRenew(`${this.prefix}l:${name}`, owner, ttlMs)) === 1;
  }

  async dropLease(name: string, owner: string): Promise<void> {
    await this.redis.stDrop(`${this.prefix}l:${name}`, owner);
  }

  async reserve(
    pool: string,
    id: string,
    bytes: number,
    limit: number,
    ttlMs: number,
  ): Promise<ReserveResult> {
    // A reservation the old primary acknowledges during a failover is lost with it (redis.ts).
    if (failingOver(this.redis)) throw new Error('a Sentinel failover is under way');
    const r = Number(await this.redis.stReserve(...this.pk(pool), id, bytes, limit, ttlMs));
    return r === 1 ? 'ok' : r === 0 ? 'full' : 'unknown';
  }

  async settle(pool: string, id: string | null, lines: readonly LedgerLine[]): Promise<void> {
    const args: (string | number)[] = [...this.pk(pool), id ?? ''];
    for (const l of lines) args.push(l.key, l.size === null ? '' : l.size);
    await this.redis.stSettle(...args);
  }

  async keep(pool: string, ids: readonly string[], ttlMs: number): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await this.redis.stKeep(...this.pk(pool), ttlMs, ...ids)).map(String);
  }

  async poolUsage(pool: string): Promise<PoolUsage> {
    const [sum, reserved] = await this.redis.stUsage(...this.pk(pool));
    return { settled: sum === '' ? null : Number(sum), reserved: Number(reserved) };
  }

  async poolLedger(pool: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const stream = this.redis.hscanStream(this.pk(pool)[1], { count: 1000 });
    for await (const batch of stream as AsyncIterable<string[]>)
      for (let i = 0; i + 1 < batch.length; i += 2) out.set(batch[i] as string, Number(batch[i + 1]));
    return out;
  }

  async poolInit(pool: string, ledger: ReadonlyMap<string, number>): Promise<void> {
    const [sum, led] = this.pk(pool);
    const m = this.redis.multi().del(led);
    let batch: (string | number)[] = [];
    let total = 0;
    for (const [k, v] of ledger) {
      batch.push(k, v);
      total += v;
      if (batch.length >= 2 * INIT_BATCH) {
        m.hset(led, ...batch);
        batch = [];
      }
    }
    if (batch.length) m.hset(led, ...batch);
    m.set(sum, total);
    const res = (await m.exec()) ?? [];
    const failed = res.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  private h = (key: string) => `${this.prefix}h:${key}`;
  private r = (key: string) => `${this.prefix}r:${key}`;

  private async run(p: ReturnType<Redis['pipeline']>): Promise<unknown[]> {
    const res = (await p.exec()) ?? [];
    const failed = res.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
    return res.map(([, v]) => v);
  }

  async hashAdd(
    entries: readonly { key: string; fields: Readonly<Record<string, number>>; ttlMs: number }[],
  ): Promise<void> {
    if (entries.length === 0) return;
    const p = this.redis.pipeline();
    for (const e of entries) {
      for (const [f, n] of Object.entries(e.fields)) p.hincrby(this.h(e.key), f, n);
      p.pexpire(this.h(e.key), e.ttlMs);
    }
    await this.run(p);
  }

  async hashSet(key: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    await this.run(this.redis.pipeline().hset(this.h(key), fields).pexpire(this.h(key), ttlMs));
  }

  async hashGet(keys: readonly string[]): Promise<Record<string, string>[]> {
    if (keys.length === 0) return [];
    const p = this.redis.pipeline();
    for (const k of keys) p.hgetall(this.h(k));
    return (await this.run(p)) as Record<string, string>[];
  }

  async hashDel(key: string, fields: readonly string[]): Promise<void> {
    if (fields.length) await this.redis.hdel(this.h(key), ...fields);
  }

  async rankAdd(
    entries: readonly { key: string; members: readonly [string, number][]; keep: number; ttlMs: number }[],
  ): Promise<void> {
    if (entries.length === 0) return;
    const p = this.redis.pipeline();
    for (const e of entries) {
      if (e.members.length === 0) continue;
      for (const [m, n] of e.members) p.zincrby(this.r(e.key), n, m);
      // Only the heaviest members survive: the ranking stays bounded whatever the clients do.
      p.zremrangebyrank(this.r(e.key), 0, -(e.keep + 1));
      p.pexpire(this.r(e.key), e.ttlMs);
    }
    await this.run(p);
  }

  async rankTop(keys: readonly { key: string; n: number }[]): Promise<[string, number][][]> {
    if (keys.length === 0) return [];
    const p = this.redis.pipeline();
    for (const { key, n } of keys) p.zrevrange(this.r(key), 0, n - 1, 'WITHSCORES');
    return ((await this.run(p)) as string[][]).map((a) => {
      const out: [string, number][] = [];
      for (let j = 0; j + 1 < a.length; j += 2) out.push([a[j] as string, Number(a[j + 1])]);
      return out;
    });
  }

  async close(): Promise<void> {}
}

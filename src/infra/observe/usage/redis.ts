// The usage sink shared by every instance: each flush adds its partial buckets to Redis (HINCRBY on
// one hash per minute and per quarter hour, ZINCRBY on sorted sets for the top-N tables, trimmed so
// they stay bounded, all with an expiry), and a read merges what the whole fleet added.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { slots } from './memory.ts';
import {
  Bucket,
  type Gauges,
  QUARTER_MS,
  TOP_KINDS,
  type UsageSink,
  WINDOWS,
  type WindowName,
  type WindowRead,
} from './usage.ts';

/** Members a top-N sorted set keeps per bucket, as a multiple of the in-memory capacity. */
const KEEP_FACTOR = 4;
/** An instance that has not flushed for this long no longer counts as live. */
const GAUGE_STALE_MS = 30_000;

type Res = 'm' | 'q';

export class RedisSink implements UsageSink {
  readonly shared = true;
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly capacity: number;
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(redis: Redis, keyPrefix: string, capacity: number) {
    this.redis = redis;
    this.prefix = `${keyPrefix}usage:`;
    this.capacity = capacity;
  }

  private key(res: Res, start: number): string {
    return `${this.prefix}${res}:${start}`;
  }

  async add(buckets: Bucket[], gauges: Gauges | null, now: number): Promise<void> {
    const p = this.redis.pipeline();
    const keep = this.capacity * KEEP_FACTOR;
    for (const b of buckets) {
      const targets: [Res, number, number][] = [
        ['m', b.start, WINDOWS.hour.spanMs + WINDOWS.hour.stepMs],
        ['q', b.start - (b.start % QUARTER_MS), WINDOWS.day.spanMs + WINDOWS.day.stepMs],
      ];
      for (const [res, start, lifeMs] of targets) {
        const key = this.key(res, start);
        const ttl = Math.ceil(lifeMs / 1000);
        for (const [svc, u] of b.utilities) {
          p.hincrby(key, `u:${svc}:requests`, u.requests);
          if (u.errors) p.hincrby(key, `u:${svc}:errors`, u.errors);
          if (u.bytesIn) p.hincrby(key, `u:${svc}:bytesIn`, u.bytesIn);
          if (u.bytesOut) p.hincrby(key, `u:${svc}:bytesOut`, u.bytesOut);
        }
        for (const [name, n] of b.counters) p.hincrby(key, `c:${name}`, n);
        p.expire(key, ttl);
        for (const kind of TOP_KINDS) {
          const entries = b.tops[kind].entries();
          if (!entries.length) continue;
          const w = `${key}:${kind}:w`;
          const n = `${key}:${kind}:n`;
          for (const e of entries) {
            p.zincrby(w, e.weight, e.key);
            p.zincrby(n, e.count, e.key);
          }
          // Only the heaviest members survive: the table stays bounded whatever the clients do.
          p.zremrangebyrank(w, 0, -(keep + 1));
          p.zremrangebyrank(n, 0, -(keep + 1));
          p.expire(w, ttl);
          p.expire(n, ttl);
        }
      }
    }
    if (gauges) {
      const g = `${this.prefix}gauges`;
      p.hset(g, this.instance, JSON.stringify({ at: now, v: gauges }));
      p.expire(g, 86_400);
    }
    const res = await p.exec();
    const failed = res?.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  async read(window: WindowName, now: number): Promise<WindowRead> {
    const res: Res = window === 'hour' ? 'm' : 'q';
    const starts = slots(window, now);
    const p = this.redis.pipeline();
    for (const start of starts) {
      const key = this.key(res, start);
      p.hgetall(key);
      for (const kind of TOP_KINDS) {
        p.zrevrange(`${key}:${kind}:w`, 0, this.capacity - 1, 'WITHSCORES');
        p.zrevrange(`${key}:${kind}:n`, 0, this.capacity * KEEP_FACTOR - 1, 'WITHSCORES');
      }
    }
    p.hgetall(`${this.prefix}gauges`);
    const out = (await p.exec()) ?? [];
    const failed = out.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
    const values = out.map(([, v]) => v);
    let i = 0;
    const buckets = starts.map((start) => {
      const b = new Bucket(start, this.capacity);
      for (const [field, v] of Object.entries((values[i++] ?? {}) as Record<string, string>)) {
        const n = Number(v);
        if (field.startsWith('c:')) b.addCounter(field.slice(2), n);
        else if (field.startsWith('u:')) {
          const cut = field.lastIndexOf(':');
          const u = b.utility(field.slice(2, cut));
          const which = field.slice(cut + 1);
          if (which === 'requests' || which === 'errors' || which === 'bytesIn' || which === 'bytesOut')
            u[which] += n;
        }
      }
      for (const kind of TOP_KINDS) {
        const w = pairs(values[i++]);
        const counts = new Map(pairs(values[i++]));
        b.tops[kind].merge(w.map(([key, weight]) => ({ key, weight, count: counts.get(key) ?? 0 })));
      }
      return b;
    });
    const gauges: Gauges[] = [];
    const stale: string[] = [];
    for (const [id, json] of Object.entries((values[i] ?? {}) as Record<string, string>)) {
      const g = parseGauges(json);
      if (g && g.at > now - GAUGE_STALE_MS) gauges.push(g.v);
      else stale.push(id);
    }
    if (stale.length) await this.redis.hdel(`${this.prefix}gauges`, ...stale).catch(() => {});
    return { buckets, gauges };
  }
}

function pairs(v: unknown): [string, number][] {
  const a = Array.isArray(v) ? (v as string[]) : [];
  const out: [string, number][] = [];
  for (let j = 0; j + 1 < a.length; j += 2) out.push([a[j] as string, Number(a[j + 1])]);
  return out;
}

function parseGauges(json: string): { at: number; v: Gauges } | null {
  try {
    const o = JSON.parse(json) as { at?: unknown; v?: unknown };
    if (typeof o.at !== 'number' || !o.v || typeof o.v !== 'object') return null;
    const v: Gauges = {};
    for (const [k, n] of Object.entries(o.v)) if (typeof n === 'number') v[k] = n;
    return { at: o.at, v };
  } catch {
    return null;
  }
}

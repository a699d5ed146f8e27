// The usage sink on the shared state: each flush adds its partial buckets (per-minute and
// per-quarter-hour hashes of counts, bounded rankings for the top-N tables, all expiring), and a read
// merges what every instance added. With Redis the dashboard shows the whole fleet; in memory, this
// process.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { SharedState } from '../../state/state.ts';
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

/** Members a ranking keeps per bucket, as a multiple of the shown capacity. */
const KEEP_FACTOR = 4;
/** An instance that has not flushed for this long no longer counts as live. */
const GAUGE_STALE_MS = 30_000;
const GAUGES = 'usage:gauges';

type Res = 'm' | 'q';

/** The bucket starts of a window ending now, oldest first (the last one is the current, partial step). */
export function slots(window: WindowName, now: number): number[] {
  const { spanMs, stepMs } = WINDOWS[window];
  const last = now - (now % stepMs);
  const n = spanMs / stepMs;
  return Array.from({ length: n }, (_, i) => last - (n - 1 - i) * stepMs);
}

export class StateSink implements UsageSink {
  readonly shared: boolean;
  private readonly state: SharedState;
  private readonly capacity: number;
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(state: SharedState, capacity: number) {
    this.state = state;
    this.capacity = capacity;
    this.shared = state.kind === 'redis';
  }

  private key(res: Res, start: number): string {
    return `usage:${res}:${start}`;
  }

  async add(buckets: Bucket[], gauges: Gauges | null, now: number): Promise<void> {
    const hashes: Parameters<SharedState['hashAdd']>[0][number][] = [];
    const ranks: Parameters<SharedState['rankAdd']>[0][number][] = [];
    const keep = this.capacity * KEEP_FACTOR;
    for (const b of buckets) {
      const targets: [Res, number, number][] = [
        ['m', b.start, WINDOWS.hour.spanMs + WINDOWS.hour.stepMs],
        ['q', b.start - (b.start % QUARTER_MS), WINDOWS.day.spanMs + WINDOWS.day.stepMs],
      ];
      for (const [res, start, ttlMs] of targets) {
        const key = this.key(res, start);
        const fields: Record<string, number> = {};
        for (const [svc, u] of b.utilities) {
          fields[`u:${svc}:requests`] = u.requests;
          if (u.errors) fields[`u:${svc}:errors`] = u.errors;
          if (u.bytesIn) fields[`u:${svc}:bytesIn`] = u.bytesIn;
          if (u.bytesOut) fields[`u:${svc}:bytesOut`] = u.bytesOut;
        }
        for (const [name, n] of b.counters) fields[`c:${name}`] = n;
        hashes.push({ key, fields, ttlMs });
        for (const kind of TOP_KINDS) {
          const entries = b.tops[kind].entries();
          if (!entries.length) continue;
          ranks.push({
            key: `${key}:${kind}:w`,
            members: entries.map((e) => [e.key, e.weight]),
            keep,
            ttlMs,
          });
          ranks.push({ key: `${key}:${kind}:n`, members: entries.map((e) => [e.key, e.count]), keep, ttlMs });
        }
      }
    }
    await Promise.all([
      this.state.hashAdd(hashes),
      this.state.rankAdd(ranks),
      gauges
        ? this.state.hashSet(GAUGES, { [this.instance]: JSON.stringify({ at: now, v: gauges }) }, 86_400_000)
        : null,
    ]);
  }

  async read(window: WindowName, now: number): Promise<WindowRead> {
    const res: Res = window === 'hour' ? 'm' : 'q';
    const starts = slots(window, now);
    const keys = starts.map((s) => this.key(res, s));
    const tops = keys.flatMap((key) =>
      TOP_KINDS.flatMap((kind) => [
        { key: `${key}:${kind}:w`, n: this.capacity },
        { key: `${key}:${kind}:n`, n: this.capacity * KEEP_FACTOR },
      ]),
    );
    const [hashes, ranked, [gaugeHash = {}]] = await Promise.all([
      this.state.hashGet(keys),
      this.state.rankTop(tops),
      this.state.hashGet([GAUGES]),
    ]);
    let t = 0;
    const buckets = starts.map((start, i) => {
      const b = new Bucket(start, this.capacity);
      for (const [field, v] of Object.entries(hashes[i] ?? {})) {
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
        const w = ranked[t++] ?? [];
        const counts = new Map(ranked[t++] ?? []);
        b.tops[kind].merge(w.map(([key, weight]) => ({ key, weight, count: counts.get(key) ?? 0 })));
      }
      return b;
    });
    const gauges: Gauges[] = [];
    const stale: string[] = [];
    for (const [id, json] of Object.entries(gaugeHash)) {
      const g = parseGauges(json);
      if (g && g.at > now - GAUGE_STALE_MS) gauges.push(g.v);
      else stale.push(id);
    }
    if (stale.length) await this.state.hashDel(GAUGES, stale).catch(() => {});
    return { buckets, gauges };
  }
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

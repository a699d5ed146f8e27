// Turns the buckets of a window into the dashboard's figures: a time series, totals per utility,
// the top-N tables (per-bucket estimates summed, then ranked) and the probe counters and gauges.
import {
  type Bucket,
  type Gauges,
  TOP_KINDS,
  type TopKind,
  type UtilityCounts,
  WINDOWS,
  type WindowName,
  type WindowRead,
} from './usage.ts';

export interface Point extends UtilityCounts {
  /** Start of the step, ms since the epoch. */
  t: number;
}

export interface TopRow {
  key: string;
  requests: number;
  /** Absent for the ranking by requests. */
  bytes?: number;
}

export interface UsageSummary {
  window: WindowName;
  stepSeconds: number;
  from: string;
  to: string;
  totals: UtilityCounts;
  series: Point[];
  utilities: (UtilityCounts & { name: string })[];
  top: Record<TopKind, TopRow[]>;
  /** Probe counters summed over the window (`cache:<name>:hit`, `relay:bytes`...). */
  counters: Record<string, number>;
  /** Probe gauges summed over the live instances. */
  gauges: Gauges;
  /** Instances that reported in the last few flushes (1 without Redis). */
  instances: number;
}

const zero = (): UtilityCounts => ({ requests: 0, errors: 0, bytesIn: 0, bytesOut: 0 });

function add(into: UtilityCounts, c: UtilityCounts): void {
  into.requests += c.requests;
  into.errors += c.errors;
  into.bytesIn += c.bytesIn;
  into.bytesOut += c.bytesOut;
}

function top(buckets: Bucket[], kind: TopKind, n: number): TopRow[] {
  const sums = new Map<string, { weight: number; count: number }>();
  for (const b of buckets) {
    for (const e of b.tops[kind].entries()) {
      const s = sums.get(e.key) ?? { weight: 0, count: 0 };
      s.weight += e.weight;
      s.count += e.count;
      sums.set(e.key, s);
    }
  }
  return [...sums]
    .sort((a, b) => b[1].weight - a[1].weight || (a[0] < b[0] ? -1 : 1))
    .slice(0, n)
    .map(([key, s]) =>
      kind === 'clientRequests' ? { key, requests: s.weight } : { key, requests: s.count, bytes: s.weight },
    );
}

export function summarize(window: WindowName, read: WindowRead, n: number): UsageSummary {
  const { stepMs } = WINDOWS[window];
  const totals = zero();
  const perUtility = new Map<string, UtilityCounts>();
  const counters: Record<string, number> = {};
  const series = read.buckets.map((b) => {
    const p: Point = { t: b.start, ...zero() };
    for (const [name, c] of b.utilities) {
      add(p, c);
      let u = perUtility.get(name);
      if (!u) {
        u = zero();
        perUtility.set(name, u);
      }
      add(u, c);
    }
    for (const [k, v] of b.counters) counters[k] = (counters[k] ?? 0) + v;
    add(totals, p);
    return p;
  });
  const gauges: Gauges = {};
  for (const g of read.gauges) for (const [k, v] of Object.entries(g)) gauges[k] = (gauges[k] ?? 0) + v;
  const first = read.buckets[0]?.start ?? 0;
  const last = read.buckets[read.buckets.length - 1]?.start ?? 0;
  return {
    window,
    stepSeconds: stepMs / 1000,
    from: new Date(first).toISOString(),
    to: new Date(last + stepMs).toISOString(),
    totals,
    series,
    utilities: [...perUtility]
      .map(([name, c]) => ({ name, ...c }))
      .sort((a, b) => b.requests - a.requests || (a.name < b.name ? -1 : 1)),
    top: Object.fromEntries(TOP_KINDS.map((k) => [k, top(read.buckets, k, n)])) as Record<TopKind, TopRow[]>,
    counters,
    gauges,
    instances: Math.max(1, read.gauges.length),
  };
}

// Per-request HTTP metrics counted in plain maps on the hot path and turned into Prometheus series
// only when /metrics is scraped. prom-client's labelled inc()/observe() hash their label objects on
// every call, which cost about a sixth of the caller-IP throughput (bench/ip.ts).
import type { Registry } from 'prom-client';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

interface Series {
  svc: string;
  route: string;
  method: string;
  /** requests per status */
  statuses: Map<number, number>;
  /** cumulative-free bucket counts (index i: <= BUCKETS[i]; last: +Inf) */
  buckets: number[];
  sum: number;
  count: number;
}

type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

export class HttpStats {
  private series: Series[] = [];
  /** svc -> route -> method: lookups with the callers' own (constant) strings, no key built per call. */
  private index = new Map<string, Map<string, Map<string, Series>>>();

  record(svc: string, route: string, method: string, status: number, seconds: number): void {
    let s = this.index.get(svc)?.get(route)?.get(method);
    if (!s) s = this.add(svc, route, method);
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > (BUCKETS[i] ?? Number.POSITIVE_INFINITY)) i++;
    s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.sum += seconds;
    s.count++;
  }

  private add(svc: string, route: string, method: string): Series {
    const s: Series = {
      svc,
      route,
      method,
      statuses: new Map(),
      buckets: new Array(BUCKETS.length + 1).fill(0),
      sum: 0,
      count: 0,
    };
    this.series.push(s);
    const byRoute = this.index.get(svc) ?? new Map<string, Map<string, Series>>();
    this.index.set(svc, byRoute);
    const byMethod = byRoute.get(route) ?? new Map<string, Series>();
    byRoute.set(route, byMethod);
    byMethod.set(method, s);
    return s;
  }

  /** Registers devutil_http_requests_total, devutil_http_errors_total and the latency histogram. */
  register(registry: Registry): void {
    const all = () => this.series;
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]) => {
      registry.registerMetric({
        name,
        help,
        type,
        aggregator: 'sum',
        get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
        reset: () => {},
      } as unknown as Parameters<Registry['registerMetric']>[0]);
    };
    metric('devutil_http_requests_total', 'HTTP requests answered', 'counter', () =>
      all().flatMap((s) =>
        [...s.statuses].map(([status, value]) => ({
          value,
          labels: { svc: s.svc, route: s.route, method: s.method, status },
        })),
      ),
    );
    metric('devutil_http_errors_total', 'HTTP responses with status >= 400', 'counter', () => {
      const errors = new Map<string, Value>();
      for (const s of all()) {
        for (const [status, n] of s.statuses) {
          if (status < 400) continue;
          const k = `${s.svc}\u0000${s.route}\u0000${status}`;
          const v = errors.get(k) ?? { value: 0, labels: { svc: s.svc, route: s.route, status } };
          v.value += n;
          errors.set(k, v);
        }
      }
      return [...errors.values()];
    });
    const name = 'devutil_http_request_duration_seconds';
    metric(name, 'HTTP request latency from first byte in to last byte out', 'histogram', () =>
      all().flatMap((s) => {
        const labels = { svc: s.svc, route: s.route, method: s.method };
        let acc = 0;
        const out: Value[] = BUCKETS.map((le, i) => {
          acc += s.buckets[i] ?? 0;
          return { value: acc, labels: { le, ...labels }, metricName: `${name}_bucket` };
        });
        out.push({ value: s.count, labels: { le: '+Inf', ...labels }, metricName: `${name}_bucket` });
        out.push({ value: s.sum, labels, metricName: `${name}_sum` });
        out.push({ value: s.count, labels, metricName: `${name}_count` });
        return out;
      }),
    );
  }
}

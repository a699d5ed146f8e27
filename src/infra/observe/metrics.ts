// Prometheus metrics: one registry per server instance (tests build many), HTTP request counts
// and latency per utility and route, process metrics, and helpers so services add their own
// `devutil_<svc>_*` series.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStats } from '../cache/cache.ts';
import { HttpStats } from './http-stats.ts';

export class Metrics {
  readonly registry = new Registry();
  /** Request counts, errors and latency per utility and route (see http-stats.ts). */
  readonly http = new HttpStats();
  /** The caches of this server (infra/cache/cache.ts), reported at scrape time; status pages read them too. */
  readonly caches: { stats(): CacheStats }[] = [];

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'devutil_' });
    this.http.register(this.registry);
    this.registerCaches();
  }

  private registerCaches(): void {
    const caches = this.caches;
    new Counter({
      name: 'devutil_cache_lookups_total',
      help: 'cache lookups by cache and result (memory_hit, disk_hit, miss)',
      labelNames: ['cache', 'result'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const c of caches) {
          const s = c.stats();
          this.inc({ cache: s.name, result: 'memory_hit' }, s.memoryHits);
          this.inc({ cache: s.name, result: 'disk_hit' }, s.diskHits);
          this.inc({ cache: s.name, result: 'miss' }, s.misses);
        }
      },
    });
    new Gauge({
      name: 'devutil_cache_bytes',
      help: 'bytes held by each cache, by tier',
      labelNames: ['cache', 'tier'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const c of caches) {
          const s = c.stats();
          this.set({ cache: s.name, tier: 'memory' }, s.memoryBytes);
          this.set({ cache: s.name, tier: 'disk' }, s.bytes);
        }
      },
    });
  }

  /** `collect`, when given, runs before each read (to add counts kept in plain numbers meanwhile). */
  counter<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: (c: Counter<L>) => void,
  ): Counter<L> {
    return new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect
        ? {
            collect(this: Counter<L>) {
              collect(this);
            },
          }
        : {}),
    });
  }

  /**
   * A counter of one label counted in plain numbers and reported when scraped: for counts made on
   * every cache hit, where a prom-client child's inc() (a label hash per call) is measurable.
   */
  tally<V extends string>(
    name: string,
    help: string,
    label: string,
    values: readonly V[],
  ): Record<V, { inc(n?: number): void }> {
    const counts = values.map((v) => ({
      v,
      n: 0,
      inc(by = 1) {
        this.n += by;
      },
    }));
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const c of counts) if (c.n > 0) this.inc({ [label]: c.v }, c.n);
      },
    });
    const out = {} as Record<V, { inc(n?: number): void }>;
    for (const c of counts) out[c.v] = c;
    return out;
  }

  /** `collect`, when given, sets the value at scrape time (for values too costly to keep current). */
  gauge<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: (g: Gauge<L>) => void,
  ): Gauge<L> {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect
        ? {
            collect(this: Gauge<L>) {
              collect(this);
            },
          }
        : {}),
    });
  }

  histogram<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    buckets?: number[],
  ): Histogram<L> {
    return new Histogram({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(buckets ? { buckets } : {}),
    });
  }
}

// Prometheus metrics: one registry per server instance (tests build many), HTTP request counts
// and latency per utility and route, process metrics, and helpers so services add their own
// `devutil_<svc>_*` series.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { HttpStats } from './http-stats.ts';

export class Metrics {
  readonly registry = new Registry();
  /** Request counts, errors and latency per utility and route (see http-stats.ts). */
  readonly http = new HttpStats();

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'devutil_' });
    this.http.register(this.registry);
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
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

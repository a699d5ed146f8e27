// Prometheus metrics: one registry per server instance (tests build many), HTTP request counts
// and latency per utility and route, process metrics, and helpers so services add their own
// `devutil_<svc>_*` series.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'svc' | 'route' | 'method' | 'status'>;
  readonly httpDuration: Histogram<'svc' | 'route' | 'method'>;
  readonly httpErrors: Counter<'svc' | 'route' | 'status'>;

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'devutil_' });
    this.httpRequests = this.counter('devutil_http_requests_total', 'HTTP requests answered', [
      'svc',
      'route',
      'method',
      'status',
    ]);
    this.httpErrors = this.counter('devutil_http_errors_total', 'HTTP responses with status >= 400', [
      'svc',
      'route',
      'status',
    ]);
    this.httpDuration = new Histogram({
      name: 'devutil_http_request_duration_seconds',
      help: 'HTTP request latency from first byte in to last byte out',
      labelNames: ['svc', 'route', 'method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
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

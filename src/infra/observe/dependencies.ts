// devutil_dependency_up: the readiness checks (Redis, the blob store, Java, image sources...) as a
// Prometheus gauge, 1 while a check passes and 0 while it fails, set at scrape time from the same
// checks /readyz runs. Alert rules (deploy/prometheus/devutil-rules.yml) need a series that says
// "Redis is down" or "S3 is down"; /readyz's body is JSON for balancers, not something to scrape.
import { Gauge } from 'prom-client';
import type { Metrics } from './metrics.ts';

export interface CheckOutcome {
  ok: boolean;
}

/** `checks` gives the latest outcome of each named check (the readiness checks' results). */
export function dependencyMetrics(
  metrics: Metrics,
  checks: () => Promise<Record<string, CheckOutcome>>,
): Gauge<'dependency'> {
  return new Gauge({
    name: 'devutil_dependency_up',
    help: 'readiness checks by dependency: 1 while it answers, 0 while it fails (as /readyz)',
    labelNames: ['dependency'],
    registers: [metrics.registry],
    async collect() {
      // A check that throws is a failing dependency, never a failed scrape.
      const all = await checks().catch(() => null);
      this.reset();
      if (!all) return;
      for (const [name, r] of Object.entries(all)) this.set({ dependency: name }, r.ok ? 1 : 0);
    },
  });
}

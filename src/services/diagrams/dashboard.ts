// The PlantUML utility's figures on the operator's dashboard (see Dashboard in ../define.ts): the
// hit ratio of its diagram answers and its render queue, from the series it reports in /metrics
// (index.ts).
import type { ServiceContext } from '../../context.ts';
import { lookups, total } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';

export function diagramsDashboard(ctx: ServiceContext): Dashboard {
  const reg = ctx.metrics.registry;
  return {
    cache: () =>
      lookups(reg, 'devutil_plantuml_diagrams_total', 'cache', { hits: ['hit'], misses: ['miss'] }),
    queue: {
      limit: ctx.config.diagrams.queueSize,
      waiting: () => total(reg, 'devutil_plantuml_workers', { state: 'queued' }),
    },
  };
}

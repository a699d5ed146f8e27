// The image utility's figures on the operator's dashboard (see Dashboard in ../define.ts): its
// cache's hit ratio and its render queue, from the series it reports in /metrics (index.ts).
import type { ServiceContext } from '../../context.ts';
import { lookups, total } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';

export function imageDashboard(ctx: ServiceContext): Dashboard {
  const reg = ctx.metrics.registry;
  return {
    cache: () =>
      lookups(reg, 'devutil_image_served_total', 'cache', { hits: ['memory', 'disk'], misses: ['miss'] }),
    queue: {
      limit: ctx.config.image.queueLength,
      waiting: () => total(reg, 'devutil_image_pool_queued'),
    },
  };
}

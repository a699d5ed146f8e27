// The avatar utility's figures on the operator's dashboard (see Dashboard in ../define.ts): the hit
// ratio of its rendered avatars (a render is the miss) and its render queue, from the series it
// reports in /metrics (index.ts).
import type { ServiceContext } from '../../context.ts';
import { lookups, total } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';

export function avatarDashboard(ctx: ServiceContext): Dashboard {
  const reg = ctx.metrics.registry;
  return {
    cache: () =>
      lookups(reg, 'devutil_avatar_cache_total', 'layer', { hits: ['memory', 'disk'], misses: ['render'] }),
    queue: {
      limit: ctx.config.avatar.renderQueue,
      waiting: () => total(reg, 'devutil_avatar_render_queued'),
    },
  };
}

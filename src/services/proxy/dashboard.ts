// The proxy's figures on the operator's dashboard (see Dashboard in ../define.ts): its cache's hit
// ratio, from the lookups it counts in /metrics (index.ts; a revalidated or stale answer came from
// the cache, a bypass is no lookup), and the ecosystem profiles it serves.
import type { ServiceContext } from '../../context.ts';
import { lookups } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';
import type { CacheStats } from './cache.ts';

/** How a lookup went, as the cache reports it: a rename there fails the type check here. */
type Result = Parameters<CacheStats['onResult']>[0];
const HITS: readonly Result[] = ['hit', 'revalidated', 'stale'];
const MISSES: readonly Result[] = ['miss'];

export function proxyDashboard(ctx: ServiceContext): Dashboard {
  return {
    profiles: ctx.config.proxy.ecosystems,
    cache: () =>
      lookups(ctx.metrics.registry, 'devutil_proxy_cache_requests_total', 'result', {
        hits: HITS,
        misses: MISSES,
      }),
  };
}

// Reverse proxy: an allow-listed accelerator for git, apt, pip, curl and browsers
// (docs/protocols/public-interface.md §6).
import { BlockList, isIPv4 } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { budgetMetrics, createByteBudget } from '../../infra/limits/byte-budget.ts';
import { type CacheStats, createStore, DiskCache } from './cache.ts';
import { MOUNT } from './definition.ts';
import type { EcosystemDef } from './ecosystems/define.ts';
import { enabledEcosystems, mountEcosystems } from './ecosystems/mount.ts';
import { ProxyGate } from './exchange.ts';
import { Links } from './links.ts';
import { proxyRoutes } from './routes.ts';
import { AllowList } from './target.ts';

function clientFilter(cidrs: readonly string[]): (ip: string) => boolean {
  if (cidrs.length === 0) return () => true;
  const bl = new BlockList();
  for (const c of cidrs) {
    const [addr = '', bits] = c.split('/');
    const type = isIPv4(addr) ? 'ipv4' : 'ipv6';
    if (bits === undefined) bl.addAddress(addr, type);
    else bl.addSubnet(addr, Number(bits), type);
  }
  return (ip) => bl.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6');
}

async function serveProxy(
  app: FastifyInstance,
  ctx: ServiceContext,
  ecosystems: readonly EcosystemDef[],
): Promise<void> {
  const cfg = ctx.config.proxy;
  app.envelopes.mount(MOUNT, 'text');
  const allow = new AllowList(cfg.allow);
  const base = cfg.secret ? `${ctx.urls.proxy}/t/${cfg.secret}` : ctx.urls.proxy;
  // No redirects, no decompression (undici's request does neither): the proxy relays bytes as sent.
  const agent = createEgress({
    resolve: [...ctx.config.egress.resolve, ...cfg.resolve],
    policy: ctx.config.egress,
    caFile: cfg.upstreamCa,
    connectTimeoutMs: cfg.connectTimeoutMs,
    headersTimeoutMs: cfg.headersTimeoutMs,
    bodyTimeoutMs: cfg.bodyTimeoutMs,
    connections: cfg.upstreamConnections,
  });
  app.addHook('onClose', async () => {
    await agent.close();
  });
  // Counted on every proxied request (and every lane repeat): plain numbers, reported when scraped.
  const byResult = ctx.metrics.tally(
    'devutil_proxy_cache_requests_total',
    'proxy cache lookups by result',
    'result',
    ['hit', 'miss', 'revalidated', 'stale', 'bypass'] as const,
  ) satisfies Record<Parameters<CacheStats['onResult']>[0], { inc(): void }>;
  const bySource = ctx.metrics.tally('devutil_proxy_bytes_total', 'proxied body bytes by source', 'source', [
    'cache',
    'upstream',
  ] as const);
  const store =
    cfg.cacheMaxBytes > 0
      ? createStore(
          cfg.cacheDir || join(ctx.dataDir, 'proxy-cache'),
          cfg.cacheMaxBytes,
          cfg.cacheMemoryBytes,
          cfg.accelRedirect !== '',
          (err) =>
            ctx.logger.warn(
              { svc: 'proxy', reason: err instanceof Error ? err.message : String(err) },
              'proxy cache failed',
            ),
        )
      : null;
  // Read when scraped: the cache's size changes with fills and evictions, not with each request.
  ctx.metrics.gauge('devutil_proxy_cache_bytes', 'bytes held by the proxy cache', [], (g) =>
    g.set(store?.stats().bytes ?? 0),
  );
  if (store) {
    ctx.metrics.caches.push(store);
    app.addHook('onClose', async () => store.idle());
  }
  const cache = store
    ? new DiskCache(
        store,
        cfg.indexTtlSec * 1000,
        {
          onResult: (result) => byResult[result].inc(),
          onBytes: (source, n) => bySource[source].inc(n),
        },
        cfg.accelRedirect,
      )
    : null;
  const budget = createByteBudget(
    'proxy',
    { client: cfg.clientBytes, total: cfg.totalBytes },
    {
      state: ctx.state,
      v6Bits: ctx.config.server.clientIpv6Prefix,
      failMode: ctx.config.redis.failMode,
      logger: ctx.logger,
    },
  );
  const unlist = budgetMetrics(ctx.metrics, budget);
  app.addHook('onClose', async () => {
    unlist();
    await budget.close();
  });
  const gate = new ProxyGate(ctx, { budget, clientAllowed: clientFilter(cfg.clients) });
  const fwd = {
    agent,
    links: new Links(base, allow),
    maxRedirects: cfg.maxRedirects,
    maxResponseBytes: cfg.maxResponseBytes,
    maxRequestBytes: cfg.maxRequestBytes,
    maxRewriteBytes: cfg.maxRewriteBytes,
    receivePack: cfg.receivePack,
    apiGithub: cfg.allow.includes('api.github.com'),
  };
  await proxyRoutes(app, ctx, { allow, gate, cache, fwd });
  const enabled = enabledEcosystems(ecosystems, cfg.ecosystems);
  await mountEcosystems(app, ctx, { mount: MOUNT, gate, fwd, store, cache }, enabled);
}

/** The proxy plugin: the host-path form, and those of `ecosystems` that the config enables. */
export const proxyPlugin =
  (ecosystems: readonly EcosystemDef[]): FastifyPluginAsync<ServiceContext> =>
  (app, ctx) =>
    serveProxy(app, ctx, ecosystems);

// Caller-IP utility: the legacy /api/ip shape and the versioned /rest/api/v1/ip shape (with the
// optional offline details, loaded on first use).
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { IpGeo } from './geo.ts';
import { Reach } from './reach.ts';
import { ipRoutes } from './routes.ts';

const ip: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/api/ip', 'legacy');
  app.envelopes.mount('/rest/api/v1/ip', 'v1');
  const cfg = ctx.config.ip;
  const geo = new IpGeo({
    countryDb: cfg.countryDb,
    asnDb: cfg.asnDb,
    retryMs: cfg.dbRetrySec * 1000,
    logger: ctx.logger.child({ svc: 'ip' }),
  });
  // Asked the way the proxy asks: the same host overrides and extra CAs, behind the egress guard.
  const http = createEgress({
    resolve: [...ctx.config.egress.resolve, ...ctx.config.proxy.resolve],
    policy: ctx.config.egress,
    caFile: ctx.config.proxy.upstreamCa,
    timeoutMs: cfg.reachTimeoutMs,
    connections: 2,
    keepAliveTimeoutMs: 1000,
  });
  app.addHook('onClose', () => http.close());
  const reach = new Reach(http, {
    targets: cfg.reachTargets,
    timeoutMs: cfg.reachTimeoutMs,
    reuseMs: cfg.reachReuseSec * 1000,
    userAgent: `devutil-reach/${ctx.version}`,
  });
  await ipRoutes(app, ctx, geo, reach);
};

export default ip;

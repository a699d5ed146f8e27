// The operator's dashboard (routes.ts). Off unless a token or single sign-on is configured (the
// default): then neither route exists, both answer 404 like any unknown path, and a start loads
// none of its modules (single sign-on, the page, the usage summary).
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';

const admin: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.admin;
  const usage = ctx.usage;
  if (!(cfg.token || cfg.oidcIssuer) || !usage) return;
  const { adminRoutes } = await import('./routes.ts');
  await adminRoutes(app, ctx, usage);
};

export default admin;

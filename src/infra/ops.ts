// Operations routes: liveness, readiness, Prometheus metrics, the OpenAPI document and its docs page.
import { timingSafeEqual } from 'node:crypto';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { unauthorized } from '../errors.ts';
import type { ServiceContext } from './context.ts';

const OPS = ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs'];

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const opsPlugin: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  for (const p of OPS) app.envelopes.mount(p, 'text');
  const hide = { hide: true };

  app.get('/healthz', { schema: { ...hide } }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok', version: ctx.version, uptime: Math.round(process.uptime()) };
  });

  app.get('/readyz', { schema: { ...hide } }, async (_req, reply) => {
    const r = await ctx.readiness.run();
    reply.header('cache-control', 'no-store').code(r.ok ? 200 : 503);
    return { status: !r.ok ? 'not ready' : r.degraded ? 'degraded' : 'ready', checks: r.checks };
  });

  if (ctx.config.metrics.enabled) {
    app.get('/metrics', { schema: { ...hide } }, async (req, reply) => {
      const token = ctx.config.metrics.token;
      if (token) {
        const auth = req.headers.authorization ?? '';
        if (!auth.startsWith('Bearer ') || !sameSecret(auth.slice(7), token))
          throw unauthorized('metrics need a bearer token');
      }
      reply.header('content-type', ctx.metrics.registry.contentType).header('cache-control', 'no-store');
      return ctx.metrics.registry.metrics();
    });
  }

  app.get('/openapi.json', { schema: { ...hide } }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, uiConfig: { deepLinking: true } });
};

// Operations routes: liveness, readiness, Prometheus metrics, the OpenAPI document and its docs page.
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from './context.ts';
import { docsPage } from './infra/http/docs-page.ts';
import { unauthorized } from './infra/http/errors.ts';
import { swaggerUiOptions } from './infra/http/openapi.ts';
import { dependencyMetrics } from './infra/observe/dependencies.ts';
import { isEnabled } from './services/define.ts';

const FAVICON = new URL('../web/src/favicon.svg', import.meta.url);

const OPS = ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs'];

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const opsPlugin: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  for (const p of OPS) app.envelopes.mount(p, 'text');

  app.get(
    '/healthz',
    { schema: { summary: 'Liveness: 200 while the process serves' } },
    async (_req, reply) => {
      reply.header('cache-control', 'no-store');
      return { status: 'ok', version: ctx.version, uptime: Math.round(process.uptime()) };
    },
  );

  const readyDoc = {
    summary:
      'Readiness: 200 "ready" or "degraded" (the utilities a failing dependency affects are listed), 503 "draining" after SIGTERM or "not ready" when no utility can serve',
  };
  const enabled = ctx.services.filter((d) => isEnabled(ctx.config, d)).map((d) => d.name);
  app.get('/readyz', { schema: readyDoc }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    // Draining (SIGTERM): not ready at once, without asking anything, so balancers stop choosing it.
    if (ctx.drain.draining) return reply.code(503).send({ status: 'draining', checks: {}, degraded: [] });
    const r = await ctx.readiness.report(enabled);
    return reply.code(r.status === 'not ready' ? 503 : 200).send(r);
  });

  if (ctx.config.metrics.enabled) {
    dependencyMetrics(ctx.metrics, async () => (await ctx.readiness.report(enabled)).checks);
    const metricsDoc = {
      summary: 'Prometheus metrics (Authorization: Bearer <token> when DEVUTIL_METRICS_TOKEN is set)',
    };
    app.get('/metrics', { schema: metricsDoc }, async (req, reply) => {
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

  // The description itself and its page are not routes of the API they describe.
  app.get('/openapi.json', { schema: { hide: true } }, async () => {
    await app.openapiReady();
    return app.swagger();
  });
  docsPage(app, '/docs', () => swaggerUiOptions(readFileSync(FAVICON, 'utf8')));
};

// The operator's dashboard: GET /admin (a page that asks for the token and draws the figures) and
// GET /rest/api/v1/admin/stats (the figures, Bearer token, v1 envelope). Without a token neither
// route exists, so both answer 404 like any unknown path.
import cluster from 'node:cluster';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, unavailable } from '../../errors.ts';
import { bearerMatches } from '../../infra/http/bearer.ts';
import { summarize } from '../../infra/observe/usage/summary.ts';
import type { WindowName } from '../../infra/observe/usage/usage.ts';
import { loadAssets } from '../../page/assets.ts';
import { secure } from '../../page/headers.ts';
import { renderAdminPage } from './page.ts';
import { allowances, dashboardsOf, probesOf } from './probes.ts';
import type { AdminStats } from './stats.ts';

/** Rows of each top-N table in the answer. */
const TOP_ROWS = 10;

/** A listener's sessions over the window, from the keys probesOf writes. */
function sessionsOf(
  name: string | undefined,
  c: Record<string, number>,
  g: Record<string, number>,
): AdminStats['relay'] {
  return {
    running: name !== undefined && (g[`${name}:instances`] ?? 0) > 0,
    activeSessions: name ? (g[`${name}:active`] ?? 0) : 0,
    sessions: name ? (c[`${name}:sessions`] ?? 0) : 0,
    bytes: name ? (c[`${name}:bytes`] ?? 0) : 0,
  };
}

const admin: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.admin;
  const usage = ctx.usage;
  if (!cfg.token || !usage) return;
  app.envelopes.mount('/rest/api/v1/admin', 'v1');
  app.envelopes.mount('/admin', 'text');
  const boards = dashboardsOf(ctx);
  usage.setProbes(probesOf(boards));
  if (cluster.isWorker && !ctx.redis)
    ctx.logger.warn({ svc: 'admin' }, 'admin dashboard without redis: each worker shows its own counts only');

  let assets: ReturnType<typeof loadAssets> | null = null;
  try {
    assets = loadAssets(ctx.logger);
  } catch (err) {
    ctx.logger.error({ err }, 'page assets missing; the admin page has no script');
  }
  const page = renderAdminPage({
    version: ctx.version,
    assets: assets
      ? { js: assets.paths['app.js'], css: assets.paths['app.css'], icon: assets.paths['favicon.svg'] }
      : null,
  });

  const pageDoc = { summary: 'Operator dashboard (HTML): asks for the admin token, then draws the stats' };
  app.get('/admin', { schema: pageDoc }, async (_req, reply) => {
    secure(reply).header('cache-control', 'no-store').header('x-robots-tag', 'noindex');
    return reply.type('text/html; charset=utf-8').send(page);
  });

  const limit = ctx.limiter.hook('admin', cfg.rateLimit);
  const auth = async (req: FastifyRequest) => {
    if (!bearerMatches(req.headers.authorization, cfg.token))
      throw new AppError('UNAUTHORIZED', 401, 'a valid admin token is required', {
        headers: { 'www-authenticate': 'Bearer realm="admin"' },
      });
  };

  app.get<{ Querystring: { window?: WindowName } }>(
    '/rest/api/v1/admin/stats',
    {
      schema: {
        summary: 'Usage of the last hour or day for the operator (Bearer DEVUTIL_ADMIN_TOKEN)',
        description:
          'Requests, bytes and errors per utility over time, top clients, top proxied repositories, packages ' +
          'and files, cache hit ratios, relay sessions and bytes, render queues, budgets and quotas. ' +
          'With Redis configured the figures are those of every instance.',
        querystring: {
          type: 'object',
          properties: { window: { type: 'string', enum: ['hour', 'day'], default: 'hour' } },
          additionalProperties: false,
        },
      },
      preHandler: [limit, auth],
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const window = req.query.window ?? 'hour';
      let read: Awaited<ReturnType<typeof usage.read>>;
      try {
        read = await usage.read(window);
      } catch (err) {
        req.log.warn({ err }, 'usage counters unreadable');
        throw unavailable('the shared usage counters are unreachable; try again shortly', 5);
      }
      const s = summarize(window, read, TOP_ROWS);
      const { budgets, quotas } = await allowances(ctx, boards);
      const c = s.counters;
      const g = s.gauges;
      // Typed as the page reads it (stats.ts): a field renamed here is renamed for the page too.
      const data: AdminStats = {
        window: s.window,
        stepSeconds: s.stepSeconds,
        from: s.from,
        to: s.to,
        instances: s.instances,
        shared: usage.sink.shared,
        totals: s.totals,
        series: s.series,
        utilities: s.utilities,
        topClients: { byBytes: s.top.clientBytes, byRequests: s.top.clientRequests },
        topProxied: { repositories: s.top.repo, packages: s.top.package, files: s.top.file },
        caches: boards.flatMap(({ name, board }) => {
          if (!board.cache) return [];
          const hits = c[`cache:${name}:hit`] ?? 0;
          const misses = c[`cache:${name}:miss`] ?? 0;
          return [{ name, hits, misses, hitRatio: hits + misses ? hits / (hits + misses) : null }];
        }),
        // The Syncthing relay: the utility whose dashboard reports sessions.
        relay: sessionsOf(boards.find(({ board }) => board.sessions)?.name, c, g),
        queues: boards.flatMap(({ name, board }) =>
          board.queue
            ? [{ name, queued: g[`queue:${name}`] ?? 0, limit: board.queue.limit * s.instances }]
            : [],
        ),
        budgets,
        quotas,
        // The proxy's ecosystem profiles served beside its host-path form (DEVUTIL_PROXY_ECOSYSTEMS):
        // the profiles the utilities' dashboards report (only the proxy has any).
        proxyEcosystems: boards.flatMap(({ board }) => board.profiles ?? []),
      };
      return { status: 1, message: 'success', data };
    },
  );
};

export default admin;

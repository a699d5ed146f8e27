// The operator's dashboard: GET /admin (a page that asks for the token and draws the figures) and
// GET /rest/api/v1/admin/stats (the figures, Bearer token, v1 envelope). Without a token or single
// sign-on neither route exists, so both answer 404 like any unknown path. With single sign-on
// (DEVUTIL_ADMIN_OIDC_*, oidc.ts) /admin sends a browser without a session to the identity provider,
// /admin/oidc/callback signs it in (session cookie), POST /admin/logout signs it out, and the
// stats accept the session cookie as well as the token (scripts keep using the token).
// Loaded by index.ts only on a server where the dashboard is on (it is off by default).
import cluster from 'node:cluster';
import { serialize as cookie, parse as parseCookies } from 'cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { bearerMatches } from '../../infra/http/bearer.ts';
import { AppError, badRequest, forbidden, unavailable } from '../../infra/http/errors.ts';
import { summarize } from '../../infra/observe/usage/summary.ts';
import type { UsageRecorder, WindowName } from '../../infra/observe/usage/usage.ts';
import { loadAssets } from '../../page/assets.ts';
import { secure } from '../../page/headers.ts';
import { type Identity, LOGIN_TTL_MS, OidcLogin, safeReturnTo } from './oidc.ts';
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

/** The dashboard's routes; index.ts calls it only when a token or single sign-on is configured. */
export async function adminRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  usage: UsageRecorder,
): Promise<void> {
  const cfg = ctx.config.admin;
  app.envelopes.mount('/rest/api/v1/admin', 'v1');
  app.envelopes.mount('/admin', 'text');
  const boards = await dashboardsOf(ctx);
  usage.setProbes(probesOf(boards));
  if (cluster.isWorker && !ctx.redis)
    ctx.logger.warn({ svc: 'admin' }, 'admin dashboard without redis: each worker shows its own counts only');

  let assets: ReturnType<typeof loadAssets> | null = null;
  try {
    assets = loadAssets(ctx.logger);
  } catch (err) {
    ctx.logger.error({ err }, 'page assets missing; the admin page has no script');
  }
  const pageInput = {
    version: ctx.version,
    assets: assets
      ? { js: assets.paths['app.js'], css: assets.paths['app.css'], icon: assets.paths['favicon.svg'] }
      : null,
  };
  const page = renderAdminPage(pageInput);
  const limit = ctx.limiter.hook('admin', cfg.rateLimit);
  const sso = cfg.oidcIssuer ? await singleSignOn(app, ctx, limit) : null;
  const noStore = (reply: FastifyReply) =>
    secure(reply).header('cache-control', 'no-store').header('x-robots-tag', 'noindex');

  const pageDoc = {
    summary: sso
      ? 'Operator dashboard (HTML): signs the operator in at the identity provider, then draws the stats'
      : 'Operator dashboard (HTML): asks for the admin token, then draws the stats',
  };
  app.get('/admin', { schema: pageDoc, ...(sso ? { preHandler: limit } : {}) }, async (req, reply) => {
    noStore(reply);
    if (!sso) return reply.type('text/html; charset=utf-8').send(page);
    const who = await sso.identity(req);
    if (!who) return sso.start(reply, '/admin');
    const name = who.email && who.emailVerified ? who.email : who.sub;
    return reply.type('text/html; charset=utf-8').send(renderAdminPage({ ...pageInput, signedIn: name }));
  });

  const auth = async (req: FastifyRequest) => {
    if (bearerMatches(req.headers.authorization, cfg.token)) return;
    // A browser signed in through single sign-on, unless it also sends a (wrong) token.
    if (sso && req.headers.authorization === undefined && (await sso.identity(req))) return;
    throw new AppError('UNAUTHORIZED', 401, 'a valid admin token is required', {
      headers: { 'www-authenticate': 'Bearer realm="admin"' },
    });
  };

  app.get<{ Querystring: { window?: WindowName } }>(
    '/rest/api/v1/admin/stats',
    {
      schema: {
        summary:
          'Usage of the last hour or day for the operator (Bearer DEVUTIL_ADMIN_TOKEN, or the single sign-on session cookie)',
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
}

interface Sso {
  /** The signed-in operator of this request, or null. */
  identity(req: FastifyRequest): Promise<Identity | null>;
  /** Sends the browser to the identity provider. */
  start(reply: FastifyReply, returnTo: string): Promise<FastifyReply>;
}

/** The single sign-on routes (/admin/oidc/login, /admin/oidc/callback, POST /admin/logout). */
async function singleSignOn(
  app: FastifyInstance,
  ctx: ServiceContext,
  limit: preHandlerHookHandler,
): Promise<Sso> {
  const cfg = ctx.config.admin;
  const redirectUrl = cfg.oidcRedirectUrl || `${ctx.config.server.publicUrl}/admin/oidc/callback`;
  const https = new URL(redirectUrl).protocol === 'https:';
  // The __Host- prefix pins the cookie to this host and path / (browsers require Secure with it).
  const SESSION = https ? '__Host-devutil-admin' : 'devutil-admin';
  const LOGIN = https ? '__Secure-devutil-admin-login' : 'devutil-admin-login';
  const http = createEgress({
    resolve: ctx.config.egress.resolve,
    policy: ctx.config.egress,
    timeoutMs: 10_000,
    connections: 4,
  });
  app.addHook('onClose', () => http.close());
  const login = new OidcLogin(
    {
      issuer: cfg.oidcIssuer,
      clientId: cfg.oidcClientId,
      clientSecret: cfg.oidcClientSecret,
      redirectUrl,
      scopes: cfg.oidcScopes,
      allowedUsers: cfg.oidcAllowedUsers,
      allowedGroups: cfg.oidcAllowedGroups,
      groupsClaim: cfg.oidcGroupsClaim,
      sessionTtlMs: cfg.oidcSessionTtlMs,
      pendingLogins: cfg.oidcPendingLogins,
      allowHttp: new URL(cfg.oidcIssuer).protocol === 'http:',
    },
    http,
    ctx.state,
    ctx.logger,
  );
  await login.load();
  const cookieOf = (req: FastifyRequest, name: string): string | undefined => {
    const h = req.headers.cookie;
    return h ? parseCookies(h)[name] : undefined;
  };
  const setCookie = (reply: FastifyReply, name: string, value: string, maxAgeSec: number, path: string) =>
    reply.header(
      'set-cookie',
      cookie(name, value, { httpOnly: true, secure: https, sameSite: 'lax', path, maxAge: maxAgeSec }),
    );
  const start = async (reply: FastifyReply, returnTo: string) => {
    const { url, loginId } = await login.begin(returnTo);
    setCookie(reply, LOGIN, loginId, LOGIN_TTL_MS / 1000, '/admin/oidc');
    return reply.code(302).header('location', url).header('cache-control', 'no-store').send();
  };
  const sso: Sso = { identity: (req) => login.session(cookieOf(req, SESSION)), start };
  const own = new URL(ctx.config.server.publicUrl).origin;

  app.get<{ Querystring: Record<string, unknown> }>(
    '/admin/oidc/login',
    {
      schema: { summary: 'Starts single sign-on at the identity provider (return_to: a path under /admin)' },
      preHandler: limit,
    },
    async (req, reply) => {
      const returnTo = safeReturnTo(req.query['return_to']);
      if (returnTo === null)
        throw badRequest('return_to must be a path under /admin on this server', 'OIDC_RETURN_TO');
      return start(reply, returnTo);
    },
  );

  app.get(
    '/admin/oidc/callback',
    {
      schema: { summary: 'Where the identity provider sends the browser back (code, state)' },
      preHandler: limit,
    },
    async (req, reply) => {
      const q = req.url.indexOf('?');
      const query = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
      const done = await login.finish(cookieOf(req, LOGIN), query);
      reply.header('set-cookie', [
        cookie(SESSION, done.sessionId, {
          httpOnly: true,
          secure: https,
          sameSite: 'lax',
          path: '/',
          maxAge: Math.floor(login.sessionTtlMs / 1000),
        }),
        cookie(LOGIN, '', { httpOnly: true, secure: https, sameSite: 'lax', path: '/admin/oidc', maxAge: 0 }),
      ]);
      return reply.code(303).header('location', done.returnTo).header('cache-control', 'no-store').send();
    },
  );

  // The page's Sign out button is a plain form: its (empty) body is read and ignored.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 1024 },
    (_req, _body, done) => done(null),
  );
  app.post(
    '/admin/logout',
    { schema: { summary: 'Ends the single sign-on session of this browser' }, preHandler: limit },
    async (req, reply) => {
      // A form on another site may not sign the operator out (SameSite=Lax keeps the cookie from it
      // too). The page's own form says Origin: null (its Referrer-Policy is no-referrer), so the
      // browser's Sec-Fetch-Site decides then.
      const origin = req.headers.origin;
      const site = req.headers['sec-fetch-site'];
      if (
        (origin !== undefined && origin !== own && origin !== 'null') ||
        (site !== undefined && site !== 'same-origin' && site !== 'none')
      )
        throw forbidden("sign-out must come from this server's own page", 'OIDC_ORIGIN');
      await login.end(cookieOf(req, SESSION));
      setCookie(reply, SESSION, '', 0, '/');
      return reply.code(303).header('location', '/').header('cache-control', 'no-store').send();
    },
  );
  return sso;
}

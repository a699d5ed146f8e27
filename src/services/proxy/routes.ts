// HTTP layer of the proxy: access checks, target parsing, policy, then forward() and relay. The
// raw request URL is parsed here (never a decoded or normalised one; docs/protocols/reverse-proxy.md §1).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, forbidden } from '../../infra/http/errors.ts';
import { docOnly } from '../../infra/http/openapi.ts';
import { afterAccess } from './access.ts';
import type { ProxyCache } from './cache.ts';
import { MOUNT } from './definition.ts';
import { classify } from './errors.ts';
import type { ProxyGate } from './exchange.ts';
import type { ForwardOptions } from './forward.ts';
import { forwarding } from './forwarding.ts';
import { SAFETY_HEADERS } from './headers.ts';
import { type AllowList, parseTarget } from './target.ts';

export interface ProxyDeps {
  allow: AllowList;
  /** Budget, concurrency share, access checks, logging and sending shared by every proxied route. */
  gate: ProxyGate;
  fwd: ForwardOptions;
  cache: ProxyCache | null;
}

const ALL = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

export async function proxyRoutes(app: FastifyInstance, ctx: ServiceContext, deps: ProxyDeps): Promise<void> {
  const cfg = ctx.config.proxy;
  // Bodies are streamed upstream untouched (git sends gzip and chunked bodies), never parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  // Built from the public URL without the secret prefix: this page is open to anyone.
  const usage = `devutil proxy: ${ctx.urls.proxy}/<host>/<path>, e.g. git clone ${ctx.urls.proxy}/github.com/owner/repo\n`;
  const info = (body: string) => async (_req: FastifyRequest, reply: FastifyReply) =>
    reply.type('text/plain; charset=utf-8').send(body);
  const doc = (summary: string) => ({ schema: { summary, tags: ['proxy'] } });
  app.get(MOUNT, doc('How to use the proxy (text)'), info(usage));
  app.get(`${MOUNT}/`, doc('How to use the proxy (text)'), info(usage));
  app.get(
    `${MOUNT}/robots.txt`,
    doc('Keeps crawlers out of the proxy'),
    info('User-agent: *\nDisallow: /\n'),
  );
  app.get(`${MOUNT}/_/health`, doc('Proxy liveness for load balancers on the proxy host'), info('ok\n'));

  app.route({
    method: ALL,
    url: `${MOUNT}/*`,
    exposeHeadRoute: false,
    schema: {
      summary: 'Forward to an allow-listed upstream: git, releases, raw files, apt, pip (redirects followed)',
      tags: ['proxy'],
    },
    // largeBody: streamed upstream (git push, pip upload), requestTimeoutMs applies. Documented
    // under a named parameter: the route itself is a wildcard, parsed by hand.
    config: {
      largeBody: true,
      ...docOnly(
        {
          params: {
            type: 'object',
            required: ['target'],
            properties: {
              target: {
                type: 'string',
                description:
                  'upstream host and path, e.g. github.com/owner/repo.git/info/refs or pypi.org/simple/requests/ (with DEVUTIL_PROXY_SECRET: t/<secret>/ first)',
              },
            },
          },
        },
        `${MOUNT}/{target}`,
      ),
    },
    onRequest: deps.gate.onRequest,
    handler: async (req, reply) => {
      let raw = (req.raw.url ?? '/').slice(MOUNT.length);
      if (cfg.secret) raw = afterAccess(raw, cfg.secret);
      const t = parseOrThrow(raw, cfg);
      if (!deps.allow.has(t.host)) throw forbidden(`host not allowed: ${t.host}`);
      if (req.method === 'OPTIONS') {
        return reply
          .code(204)
          .headers({
            ...SAFETY_HEADERS,
            'access-control-allow-methods': 'GET, HEAD, POST, OPTIONS',
            'access-control-allow-headers': 'Range, If-Range, If-None-Match, If-Modified-Since, Content-Type',
            'access-control-max-age': '600',
          })
          .send();
      }
      const { decide, forward, subjectsOf } = forwarding.value ?? (await forwarding.get());
      const d = decide(t.host, req.method, t.url, deps.fwd);
      if (!d.ok)
        throw new AppError('NOT_ALLOWED', d.status, d.reason, d.allow ? { headers: { allow: d.allow } } : {});

      const x = await deps.gate.open(
        req,
        reply,
        { host: t.host, path: t.url.pathname },
        ctx.usage ? subjectsOf(t.host, t.url.pathname) : undefined,
      );
      const body = req.method === 'GET' || req.method === 'HEAD' ? null : req.raw;
      const fr = {
        method: req.method,
        url: t.url,
        route: d.route,
        headers: req.headers,
        body,
        signal: x.signal,
      };
      return deps.gate.relay(x, reply, () =>
        deps.cache ? deps.cache.serve(fr, deps.fwd, req.log) : forward(deps.fwd, fr),
      );
    },
  });
}

function parseOrThrow(raw: string, cfg: ServiceContext['config']['proxy']) {
  try {
    return parseTarget(raw, { maxLength: cfg.maxPathLength, allowHttp: cfg.allowHttp });
  } catch (err) {
    const f = classify(err);
    throw new AppError('BAD_TARGET', f.status, f.message);
  }
}

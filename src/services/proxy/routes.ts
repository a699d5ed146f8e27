// HTTP layer of the proxy: access checks, target parsing, policy, then forward() and relay. The
// raw request URL is parsed here (never a decoded or normalised one; digest §1).
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
  onRequestHookHandler,
} from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, alreadyLogged, forbidden, tooMany, unavailable } from '../../errors.ts';
import { readSmall } from '../../infra/egress/capped-body.ts';
import { RequestAbort } from '../../infra/egress/client.ts';
import { docOnly } from '../../infra/http/openapi.ts';
import type { ByteBudget } from '../../infra/limits/byte-budget.ts';
import { socketBytes } from '../../infra/observe/usage/usage.ts';
import { FileRangeStream } from '../../infra/storage/file-read.ts';
import type { ProxyCache } from './cache.ts';
import { MOUNT } from './definition.ts';
import { classify, codeOf } from './errors.ts';
import { type ForwardOptions, forward, type Upstream } from './forward.ts';
import { SAFETY_HEADERS } from './headers.ts';
import { meter, SMALL_BODY } from './meter.ts';
import { decide } from './policy.ts';
import { subjectsOf } from './subjects.ts';
import { type AllowList, parseTarget } from './target.ts';

export interface ProxyDeps {
  allow: AllowList;
  /** Per-client and total bytes sent to clients (config clientBytes, totalBytes). */
  budget: ByteBudget;
  fwd: ForwardOptions;
  cache: ProxyCache | null;
  clientAllowed: (ip: string) => boolean;
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

  const active = new Map<string, number>();
  // Only the checks that are on: an async hook costs a promise and a tick on every request.
  const onRequest: (onRequestHookHandler | onRequestAsyncHookHandler)[] = [];
  if (cfg.clients.length)
    onRequest.push((req, _reply, done) =>
      done(
        deps.clientAllowed(req.clientIp) ? undefined : forbidden('this proxy is not open to your address'),
      ),
    );
  if (cfg.rateLimit.limit > 0) onRequest.push(ctx.limiter.hook('proxy', cfg.rateLimit));

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
    onRequest,
    handler: async (req, reply) => {
      let raw = (req.raw.url ?? '/').slice(MOUNT.length);
      if (cfg.secret) {
        const p = `/t/${cfg.secret}/`;
        if (!raw.startsWith(p)) throw forbidden('this proxy needs its access prefix /t/<secret>/');
        raw = raw.slice(p.length - 1);
      }
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
      const d = decide(t.host, req.method, t.url, deps.fwd);
      if (!d.ok)
        throw new AppError('NOT_ALLOWED', d.status, d.reason, d.allow ? { headers: { allow: d.allow } } : {});

      const ip = req.clientIp;
      const budget = deps.budget.enabled ? deps.budget : null;
      if (budget) {
        const spent = await budget.check(ip).catch(() => {
          throw unavailable('byte budget unavailable, try again shortly', 5, 'BUDGET_UNAVAILABLE');
        });
        if (!spent.allowed) throw tooMany(budget.reason(spent), spent.retryAfterSec, 'BYTE_BUDGET');
      }
      // For the admin dashboard's top repositories, packages and files (counted when it is on).
      if (ctx.usage) req.usageSubjects = subjectsOf(t.host, t.url.pathname);
      const n = active.get(ip) ?? 0;
      if (cfg.maxConcurrent > 0 && n >= cfg.maxConcurrent) throw tooMany('too many concurrent requests', 1);
      active.set(ip, n + 1);
      const ac = new RequestAbort();
      const started = performance.now();
      let upstreamStatus = 0;
      // An upstream failure (before or during the body) is reported once, on the exchange line.
      let failure: { reason: string; code?: string } | undefined;
      reply.raw.once('close', () => {
        const left = (active.get(ip) ?? 1) - 1;
        if (left <= 0) active.delete(ip);
        else active.set(ip, left);
        const finished = reply.raw.writableFinished;
        if (!finished) {
          ac.abort();
          // onResponse runs for finished answers only: a download cut short counts here, bytes and all.
          if (ctx.usage) {
            const b = socketBytes(req.raw.socket);
            ctx.usage.record('proxy', ip, reply.raw.statusCode, b.bytesIn, b.bytesOut, req.usageSubjects);
          }
        }
        // One line per exchange; the path only, never the query (signed URLs carry secrets there).
        const line = {
          host: t.host,
          path: t.url.pathname,
          status: reply.raw.statusCode,
          upstreamStatus,
          bytes: Number(reply.raw.getHeader('content-length') ?? 0) || undefined,
          ms: Math.round(performance.now() - started),
          ip,
          complete: finished,
        };
        if (failure) req.log.warn({ ...line, ...failure }, 'upstream failed');
        else req.log.info(line, 'proxied');
      });
      const body = req.method === 'GET' || req.method === 'HEAD' ? null : req.raw;
      const fr = {
        method: req.method,
        url: t.url,
        route: d.route,
        headers: req.headers,
        body,
        signal: ac,
      };
      let up: Upstream;
      let small: Buffer | undefined;
      try {
        up = deps.cache ? await deps.cache.serve(fr, deps.fwd, req.log) : await forward(deps.fwd, fr);
        upstreamStatus = up.status;
        // A small body is read whole and sent with its headers in one write: no stream plumbing per
        // request, and a failure before its end is still a clean 502/504 rather than a cut answer.
        const len = Number(up.headers['content-length'] ?? Number.NaN);
        // (Cached files keep their own pooled copy into the response.)
        if (up.body && len < SMALL_BODY && !(up.body instanceof FileRangeStream))
          small = await readSmall(up.body, len, 'upstream response');
      } catch (err) {
        const f = classify(err);
        if (f.status === 499 || ac.aborted) {
          reply.raw.destroy();
          return reply;
        }
        const e = new AppError('UPSTREAM', f.status, f.message, f.headers ? { headers: f.headers } : {});
        if (f.status < 500) throw e;
        failure = { reason: f.message, code: codeOf(err) || undefined };
        throw alreadyLogged(e);
      }
      reply.code(up.status).headers(up.headers).headers(SAFETY_HEADERS);
      if (small) {
        // Charged, not written to the store at once: the budget's batch does that within its
        // interval (a store write per small answer would cost more than the answer), and this
        // instance counts its unwritten charges in its own checks.
        budget?.charge(ip, small.length);
        return reply.send(small);
      }
      if (up.offloaded !== undefined) {
        // nginx sends the body (X-Accel-Redirect): charged now, as what it is about to send.
        if (budget) {
          budget.charge(ip, up.offloaded);
          await budget.flush();
        }
        return reply.send();
      }
      if (up.text !== undefined) {
        if (budget) {
          budget.charge(ip, Buffer.byteLength(up.text));
          await budget.flush();
        }
        return reply.send(up.text);
      }
      if (up.body) {
        up.body.on('error', (err) => {
          if (classify(err).status === 499) return; // the client left: not an upstream failure
          failure = { reason: classify(err).message, code: codeOf(err) || undefined };
          alreadyLogged(err);
        });
        meter(reply.raw, budget, ip);
        return reply.send(up.body);
      }
      return reply.send();
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

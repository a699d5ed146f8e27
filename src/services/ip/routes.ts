// GET /api/ip and GET /rest/api/v1/ip (docs/protocols/public-interface.md §3.1, §3.2), plus what echoip and
// icanhazip users expect: ?format=text or Accept: text/plain gives the bare address and a newline;
// ?details=1 on the versioned path adds scope, country, ASN and organisation (geo.ts).
// This is the route table and the fast lane; the handlers are in handlers.ts.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import type { IpGeo } from './geo.ts';
import {
  acceptsText,
  HEADERS,
  type IpDeps,
  type IpReq,
  LEGACY_HEAD,
  legacyIp,
  reachCheck,
  V1_HEAD,
  V1_TAIL,
  v1Ip,
} from './handlers.ts';
import type { Reach } from './reach.ts';
import { legacyShape, querystring, textShape, v1Querystring, v1Shape } from './schemas.ts';

export async function ipRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  geo: IpGeo,
  reach: Reach,
): Promise<void> {
  const version = `V${ctx.version.replace(/[^0-9.].*$/, '')}`;
  const rate = ctx.config.ip.rateLimit;
  // No hook when the limit is off: an async hook costs a promise and a tick on every request.
  const limited = rate.limit > 0 ? { onRequest: ctx.limiter.hook('ip', rate) } : {};
  const d: IpDeps = {
    version,
    legacyTail: `},"version":${JSON.stringify(version)}}`,
    geo,
    reach,
    dbRetrySec: ctx.config.ip.dbRetrySec,
  };
  // The caller's own address, the same answers, before the router (infra/http/fast-lane.ts).
  const laneHeaders = Object.entries(HEADERS).flat();
  const textHeaders = [...laneHeaders, 'content-type', 'text/plain; charset=utf-8'];
  const jsonHeaders = [...laneHeaders, 'content-type', 'application/json; charset=utf-8'];
  const laneLimit = rate.limit > 0 ? { bucket: 'ip', rate } : null;
  const fast = (url: string, head: string, tail: string) =>
    ctx.lane.route(url, {
      svc: 'ip',
      route: url,
      limit: laneLimit,
      answer: (r) => {
        // Only the plain forms; ?ip=, ?details and anything else are the router's.
        const text = r.query === '' ? acceptsText(r.headers.accept) : r.query === 'format=text';
        if (!text && r.query !== '' && r.query !== 'format=json') return undefined;
        if (text) return { headers: textHeaders, body: `${r.clientIp}\n` };
        return { headers: jsonHeaders, body: `${head}${JSON.stringify(r.clientIp)}${tail}` };
      },
    });
  fast('/api/ip', LEGACY_HEAD, d.legacyTail);
  fast('/rest/api/v1/ip', V1_HEAD, V1_TAIL);

  app.get(
    '/api/ip',
    {
      ...limited,
      schema: {
        summary: 'Caller IP (legacy shape)',
        tags: ['ip'],
        querystring,
        response: {
          200: {
            content: { 'application/json': { schema: legacyShape }, 'text/plain': { schema: textShape } },
          },
        },
      },
    },
    (req: IpReq, reply) => legacyIp(d, req, reply),
  );

  app.get(
    '/rest/api/v1/ip',
    {
      ...limited,
      schema: {
        summary: 'Caller IP',
        tags: ['ip'],
        querystring: v1Querystring,
        response: {
          200: { content: { 'application/json': { schema: v1Shape }, 'text/plain': { schema: textShape } } },
        },
      },
    },
    (req: IpReq, reply) => v1Ip(d, req, reply),
  );

  const reachLimit = ctx.config.ip.reachRateLimit;
  app.get(
    '/rest/api/v1/ip/reach',
    {
      ...(reachLimit.limit > 0 ? { onRequest: ctx.limiter.hook('ip-reach', reachLimit) } : {}),
      schema: {
        summary: 'Whether GitHub, PyPI, Docker Hub and Hugging Face answer from this server, with timings',
        description:
          'All targets are asked at once within DEVUTIL_IP_REACH_TIMEOUT_MS; one round serves every caller for DEVUTIL_IP_REACH_REUSE_SEC.',
        tags: ['ip'],
      },
    },
    (req, reply) => reachCheck(d, req, reply),
  );
}

// GET /api/ip and GET /rest/api/v1/ip (docs/protocols/public-interface.md §3.1, §3.2), plus what echoip and
// icanhazip users expect: ?format=text or Accept: text/plain gives the bare address and a newline;
// ?details=1 on the versioned path adds scope, country, ASN and organisation (geo.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { ExtraMissing } from '../../infra/config/extras.ts';
import { badRequest, unavailable } from '../../infra/http/errors.ts';
import { parseAddress } from './address.ts';
import type { IpGeo } from './geo.ts';
import type { Reach } from './reach.ts';
import { DETAILS_ON, legacyShape, querystring, textShape, v1Querystring, v1Shape } from './schemas.ts';

const LEGACY_HEAD = '{"status":1,"msg":"success","data":{"ip":';
const V1_HEAD = '{"status":1,"message":"success","data":{"ip":';

/** True when the caller asked for plain text rather than JSON. */
export function wantsText(req: FastifyRequest<{ Querystring: { format?: string } }>): boolean {
  const f = req.query.format;
  if (f) return f === 'text';
  return acceptsText(req.headers.accept);
}

function acceptsText(accept = ''): boolean {
  return (
    accept.includes('text/plain') && !accept.includes('application/json') && !accept.includes('text/html')
  );
}

function sendText(reply: FastifyReply, ip: string): string {
  reply.type('text/plain; charset=utf-8');
  return `${ip}\n`;
}

/** The address of ?ip=, checked (400 in the route's envelope), or null without one. */
function askedAddress(req: FastifyRequest<{ Querystring: { ip?: string } }>): string | null {
  const raw = req.query.ip;
  if (raw === undefined) return null;
  const p = parseAddress(raw);
  if (!p.ok) throw badRequest(p.reason, 'BAD_IP');
  return p.ip;
}

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
  type Req = FastifyRequest<{ Querystring: { format?: 'json' | 'text'; details?: string; ip?: string } }>;
  // Read by the home page from the single-stack hosts (ip.v4Url, ip.v6Url): another origin.
  const headers = { 'cache-control': 'no-store', vary: 'accept', 'access-control-allow-origin': '*' };
  // The two plain answers are written as text around the one variable part, what the response
  // schemas (kept for the API docs and the details answer) would produce; a string payload skips
  // Fastify's serializer lookup per request.
  const legacyTail = `},"version":${JSON.stringify(version)}}`;
  const json = (reply: FastifyReply, head: string, ip: string, tail: string) => {
    reply.header('content-type', 'application/json; charset=utf-8');
    return `${head}${JSON.stringify(ip)}${tail}`;
  };
  // The caller's own address, the same answers, before the router (infra/http/fast-lane.ts).
  const laneHeaders = Object.entries(headers).flat();
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
  fast('/api/ip', LEGACY_HEAD, legacyTail);
  fast('/rest/api/v1/ip', V1_HEAD, '}}');

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
    // Synchronous handlers: Fastify sends their value without a promise per request.
    (req: Req, reply) => {
      reply.headers(headers);
      const asked = askedAddress(req);
      if (asked !== null) {
        if (wantsText(req)) return sendText(reply, asked);
        return details(asked).then((data) => ({ status: 1, msg: 'success', data, version }));
      }
      if (wantsText(req)) return sendText(reply, req.clientIp);
      return json(reply, LEGACY_HEAD, req.clientIp, legacyTail);
    },
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
    (req: Req, reply) => {
      reply.headers(headers);
      const asked = askedAddress(req);
      if (asked !== null) {
        if (wantsText(req)) return sendText(reply, asked);
        return withDetails(asked);
      }
      if (wantsText(req)) return sendText(reply, req.clientIp);
      const d = req.query.details;
      if (d === undefined || !DETAILS_ON.includes(d)) return json(reply, V1_HEAD, req.clientIp, '}}');
      return withDetails(req.clientIp);
    },
  );

  async function withDetails(ip: string) {
    return { status: 1, message: 'success', data: await details(ip) };
  }

  async function details(ip: string) {
    try {
      return { ip, ...(await geo.lookup(ip)) };
    } catch (err) {
      // geo.ts logged why; the address itself is still known, but the answer asked for more.
      throw unavailable(
        err instanceof ExtraMissing ? err.message : 'the IP details database is unavailable',
        ctx.config.ip.dbRetrySec,
        'IP_DB_UNAVAILABLE',
      );
    }
  }

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
    async (_req, reply) => {
      reply.header('cache-control', 'no-store');
      reply.header('access-control-allow-origin', '*');
      return { status: 1, message: 'success', data: await reach.check() };
    },
  );
}

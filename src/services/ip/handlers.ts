// The IP handlers: the caller's (or ?ip='s) address in the legacy and the versioned shape, as JSON
// or as text, ?details=1 from the offline databases (geo.ts), and the reach check. Each takes the
// IpDeps ipRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ExtraMissing } from '../../infra/config/extras.ts';
import { badRequest, unavailable } from '../../infra/http/errors.ts';
import { parseAddress } from './address.ts';
import type { IpGeo } from './geo.ts';
import type { Reach } from './reach.ts';
import { DETAILS_ON } from './schemas.ts';

export const LEGACY_HEAD = '{"status":1,"msg":"success","data":{"ip":';
export const V1_HEAD = '{"status":1,"message":"success","data":{"ip":';
export const V1_TAIL = '}}';

// Read by the home page from the single-stack hosts (ip.v4Url, ip.v6Url): another origin.
export const HEADERS = { 'cache-control': 'no-store', vary: 'accept', 'access-control-allow-origin': '*' };

export interface IpDeps {
  /** `V` and the release number, in the legacy answer. */
  version: string;
  /** What follows the address in the legacy answer (it carries the version). */
  legacyTail: string;
  geo: IpGeo;
  reach: Reach;
  dbRetrySec: number;
}

export type IpReq = FastifyRequest<{
  Querystring: { format?: 'json' | 'text'; details?: string; ip?: string };
}>;

/** True when the caller asked for plain text rather than JSON. */
export function wantsText(req: FastifyRequest<{ Querystring: { format?: string } }>): boolean {
  const f = req.query.format;
  if (f) return f === 'text';
  return acceptsText(req.headers.accept);
}

export function acceptsText(accept = ''): boolean {
  return (
    accept.includes('text/plain') && !accept.includes('application/json') && !accept.includes('text/html')
  );
}

function sendText(reply: FastifyReply, ip: string): string {
  reply.type('text/plain; charset=utf-8');
  return `${ip}\n`;
}

// The two plain answers are written as text around the one variable part, what the response
// schemas (kept for the API docs and the details answer) would produce; a string payload skips
// Fastify's serializer lookup per request.
function json(reply: FastifyReply, head: string, ip: string, tail: string): string {
  reply.header('content-type', 'application/json; charset=utf-8');
  return `${head}${JSON.stringify(ip)}${tail}`;
}

/** The address of ?ip=, checked (400 in the route's envelope), or null without one. */
function askedAddress(req: FastifyRequest<{ Querystring: { ip?: string } }>): string | null {
  const raw = req.query.ip;
  if (raw === undefined) return null;
  const p = parseAddress(raw);
  if (!p.ok) throw badRequest(p.reason, 'BAD_IP');
  return p.ip;
}

// Synchronous handlers: Fastify sends their value without a promise per request.

/** GET /api/ip: the address, `{status, msg, data, version}`; with ?ip= the details of that one. */
export function legacyIp(d: IpDeps, req: IpReq, reply: FastifyReply) {
  reply.headers(HEADERS);
  const asked = askedAddress(req);
  if (asked !== null) {
    if (wantsText(req)) return sendText(reply, asked);
    return details(d, asked).then((data) => ({ status: 1, msg: 'success', data, version: d.version }));
  }
  if (wantsText(req)) return sendText(reply, req.clientIp);
  return json(reply, LEGACY_HEAD, req.clientIp, d.legacyTail);
}

/** GET /rest/api/v1/ip: the address, `{status, message, data}`; details with ?ip= or ?details=1. */
export function v1Ip(d: IpDeps, req: IpReq, reply: FastifyReply) {
  reply.headers(HEADERS);
  const asked = askedAddress(req);
  if (asked !== null) {
    if (wantsText(req)) return sendText(reply, asked);
    return withDetails(d, asked);
  }
  if (wantsText(req)) return sendText(reply, req.clientIp);
  const on = req.query.details;
  if (on === undefined || !DETAILS_ON.includes(on)) return json(reply, V1_HEAD, req.clientIp, V1_TAIL);
  return withDetails(d, req.clientIp);
}

/** GET /rest/api/v1/ip/reach: whether the usual upstreams answer from this server. */
export async function reachCheck(d: IpDeps, _req: FastifyRequest, reply: FastifyReply) {
  reply.header('cache-control', 'no-store');
  reply.header('access-control-allow-origin', '*');
  return { status: 1, message: 'success', data: await d.reach.check() };
}

async function withDetails(d: IpDeps, ip: string) {
  return { status: 1, message: 'success', data: await details(d, ip) };
}

async function details(d: IpDeps, ip: string) {
  try {
    return { ip, ...(await d.geo.lookup(ip)) };
  } catch (err) {
    // geo.ts logged why; the address itself is still known, but the answer asked for more.
    throw unavailable(
      err instanceof ExtraMissing ? err.message : 'the IP details database is unavailable',
      d.dbRetrySec,
      'IP_DB_UNAVAILABLE',
    );
  }
}

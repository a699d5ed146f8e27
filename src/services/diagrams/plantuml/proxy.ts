// GET /proxy?src=URL[&fmt=][&idx=]: fetch diagram text from an allow-listed host, then render it. It makes
// the server reach out to other hosts (SSRF), so it is off until hosts are configured, keeps the server's
// URL guards (docs/protocols/plantuml-server.md §2: http(s) only, no userinfo, exact hosts) and fetches
// through the egress client, whose address guard refuses hosts that point inward.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { BodyTooLarge, discard, readCapped } from '../../../infra/egress/capped-body.ts';
import { createEgress, refusal, undiciCode } from '../../../infra/egress/client.ts';
import {
  AppError,
  badGateway,
  badRequest,
  forbidden,
  gatewayTimeout,
  notFound,
} from '../../../infra/http/errors.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import { normalizeSource } from './encoding.ts';
import type { PlantumlEngine } from './engine.ts';
import type { PlantumlHandlers } from './routes.ts';

const PROXY_FORMATS = new Set(['png', 'svg', 'eps', 'epstext', 'txt', 'map', 'pdf']);
const FETCH_TIMEOUT_MS = 10_000;

/** The URL when it may be fetched, else the reason (as an AppError). */
export function checkSource(src: string, hosts: readonly string[]): URL {
  let u: URL;
  try {
    u = new URL(src);
  } catch {
    throw badRequest('URL malformed.');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badRequest('URL malformed.');
  if (u.username || u.password || src.includes('@')) throw badRequest('Forbidden URL format.');
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  if (!hosts.some((h) => h.toLowerCase() === host))
    throw forbidden(`host ${host.slice(0, 100)} is not allowed`);
  return u;
}

/** `handlers` (routes.ts) brings the formats and the diagram answer on the first request. */
export async function proxyRoute(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  handlers: PlantumlHandlers,
) {
  const cfg = ctx.config.diagrams;
  const onRequest = ctx.limiter.hook('diagrams', cfg.rateLimit);
  const { plantuml: prepared } = ctx.local(DIAGRAM_MEMOS);
  const http = createEgress({
    resolve: ctx.config.egress.resolve,
    policy: ctx.config.egress,
    timeoutMs: FETCH_TIMEOUT_MS,
    connections: 8,
  });
  app.addHook('onClose', async () => {
    await http.close();
  });

  /** The diagram text at `u`: 200 only, no redirects, at most maxSourceBytes, FETCH_TIMEOUT_MS in all. */
  async function fetchText(u: URL): Promise<string> {
    try {
      const res = await http.request({
        origin: u.origin,
        path: `${u.pathname}${u.search}`,
        method: 'GET',
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (res.statusCode !== 200) {
        discard(res.body);
        throw badGateway(`diagram source answered ${res.statusCode}`);
      }
      const body = await readCapped(res.body, cfg.maxSourceBytes, {
        declared: res.headers['content-length'],
      });
      return body.toString('utf8');
    } catch (err) {
      if (err instanceof BodyTooLarge) throw badRequest('diagram source is too large');
      // A refusal by policy is the operator's to lift: 403 with the host, address and setting.
      const refused = refusal(err);
      if (refused) throw forbidden(`the diagram source address is not allowed: ${refused.message}`);
      if (
        (err instanceof Error && err.name === 'TimeoutError') ||
        ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'].includes(
          undiciCode(err) ?? '',
        )
      )
        throw gatewayTimeout('diagram source fetch timed out');
      if (err instanceof AppError) throw err;
      throw badGateway('cannot fetch the diagram source');
    }
  }

  type Q = { Querystring: { src?: string; fmt?: string; idx?: string } };
  const schema = {
    summary:
      'Render diagram text fetched from ?src= (only from DEVUTIL_DIAGRAMS_PROXY_HOSTS; off by default)',
    tags: ['diagrams'],
  };
  app.get<Q>('/plantuml/proxy', { onRequest, schema }, async (req, reply) => {
    if (cfg.proxyHosts.length === 0) throw forbidden('the /proxy endpoint is off on this server');
    const { src, fmt: word = 'png', idx = '0' } = req.query;
    if (typeof src !== 'string' || src === '') throw badRequest('missing src parameter');
    const { formatOf, sendDiagram } = await handlers.get();
    const fmt = PROXY_FORMATS.has(word) ? formatOf(word) : null;
    if (!fmt) throw notFound(`unknown format ${String(word).slice(0, 40)}`);
    if (!/^\d{1,4}$/.test(idx)) throw badRequest('idx must be a small number');
    const text = await fetchText(checkSource(src, cfg.proxyHosts));
    return sendDiagram(req, reply, engine, fmt, Number(idx), normalizeSource(text), {
      cacheHeaders: cfg.cacheHeaders,
      prepared,
    });
  });
}

// GET /proxy?src=URL[&fmt=][&idx=]: fetch diagram text from an allow-listed host, then render it.
// It makes the server reach out to other hosts (SSRF), so it is off until hosts are configured,
// and keeps the server's URL guards (digest section 2): http(s) only, no userinfo, exact hosts.
import type { FastifyInstance } from 'fastify';
import { badGateway, badRequest, forbidden, gatewayTimeout, notFound } from '../../errors.ts';
import type { ServiceContext } from '../../infra/context.ts';
import { sendDiagram } from './diagram-reply.ts';
import { normalizeSource } from './encoding.ts';
import type { PlantumlEngine } from './engine.ts';
import { formatOf } from './formats.ts';

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

async function fetchText(u: URL, maxBytes: number): Promise<string> {
  let res: Response;
  try {
    res = await fetch(u, { redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    if (err instanceof Error && err.name === 'TimeoutError')
      throw gatewayTimeout('diagram source fetch timed out');
    throw badGateway('cannot fetch the diagram source');
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw badGateway(`diagram source answered ${res.status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (;;) {
    const r = reader ? await reader.read() : { done: true as const, value: undefined };
    if (r.done) break;
    size += r.value.length;
    if (size > maxBytes) {
      await reader?.cancel();
      throw badRequest('diagram source is too large');
    }
    chunks.push(Buffer.from(r.value));
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function proxyRoute(app: FastifyInstance, ctx: ServiceContext, engine: PlantumlEngine) {
  const cfg = ctx.config.plantuml;
  const onRequest = ctx.limiter.hook('plantuml', cfg.rateLimit);
  type Q = { Querystring: { src?: string; fmt?: string; idx?: string } };
  app.get<Q>('/plantuml/proxy', { onRequest, schema: { hide: true } }, async (req, reply) => {
    if (cfg.proxyHosts.length === 0) throw forbidden('the /proxy endpoint is off on this server');
    const { src, fmt: word = 'png', idx = '0' } = req.query;
    if (typeof src !== 'string' || src === '') throw badRequest('missing src parameter');
    const fmt = PROXY_FORMATS.has(word) ? formatOf(word) : null;
    if (!fmt) throw notFound(`unknown format ${String(word).slice(0, 40)}`);
    if (!/^\d{1,4}$/.test(idx)) throw badRequest('idx must be a small number');
    const text = await fetchText(checkSource(src, cfg.proxyHosts), cfg.maxSourceBytes);
    return sendDiagram(req, reply, engine, fmt, Number(idx), normalizeSource(text), {
      cacheHeaders: cfg.cacheHeaders,
    });
  });
}

// Home page plugin: GET / (server-rendered, per request) and the hashed assets under /assets/.
// Registered last so it can tell which utilities the server actually serves.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../infra/context.ts';
import { type Assets, loadAssets } from './assets.ts';
import { type Coding, negotiate, SplicedGzip } from './encoding.ts';
import { escapeHtml } from './html.ts';
import { PAGE_CSP, renderPage, UTILITIES, type Utility } from './page.ts';

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', PAGE_CSP)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('x-content-type-options', 'nosniff');
}

const web: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/assets', 'text');
  let assets: Assets | null = null;
  try {
    assets = await loadAssets(ctx.logger);
  } catch (err) {
    // Without the script and stylesheet the page still reads; say why in the log.
    ctx.logger.error({ err }, 'web assets could not be built; serving the page without them');
  }

  // Lazy import: services/index.ts imports this file, so a static import would be a cycle.
  const { SERVICES } = await import('../index.ts');
  const registered = new Set<string>(
    SERVICES.filter((s) => (ctx.config[s.name] as { enabled?: boolean }).enabled !== false).map(
      (s) => s.name,
    ),
  );
  const enabled = Object.fromEntries(UTILITIES.map((u) => [u, registered.has(u)])) as Record<
    Utility,
    boolean
  >;
  // The relay is not an HTTP service; its section is live when its status route exists.
  enabled.relay = ctx.config.relay.enabled && app.hasRoute({ method: 'GET', url: '/rest/api/v1/relay' });

  const paths = assets
    ? { js: assets.paths['app.js'], css: assets.paths['app.css'], icon: assets.paths['favicon.svg'] }
    : null;

  // Everything on the page but the caller's address is fixed for the life of the process: render
  // it once around a marker and splice the address in per request.
  const MARK = 'DEVUTIL-CLIENT-IP-SLOT';
  const parts = renderPage({
    urls: ctx.urls,
    enabled,
    clientIp: MARK,
    version: ctx.version,
    maxUploadBytes: ctx.config.files.maxBytes,
    proxy: { allow: ctx.config.proxy.allow, secret: ctx.config.proxy.secret !== '' },
    relay: { port: ctx.config.relay.port },
    assets: paths,
  }).split(MARK);
  // The address shows only in the IP section: with that utility off there is no slot to fill.
  if (parts.length > 2) throw new Error('the page has more than one client address slot');
  const hasSlot = parts.length === 2;
  const page = new SplicedGzip(parts[0] ?? '', parts[1] ?? '');

  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    secure(reply).header('cache-control', 'no-store').header('vary', 'accept-encoding');
    reply.type('text/html; charset=utf-8');
    const ip = hasSlot ? escapeHtml(req.clientIp) : '';
    if (negotiate(req.headers['accept-encoding'], ['gzip']) === null) return page.plain(ip);
    reply.header('content-encoding', 'gzip');
    return page.gzip(ip);
  });

  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, async (req, reply) => {
    const asset = assets?.byName.get(req.params.name);
    if (!asset) {
      reply.code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-store');
      return 'no such asset\n';
    }
    // Names carry a content hash, so a response never goes stale.
    const coding = negotiate(req.headers['accept-encoding'], Object.keys(asset.coded) as Coding[]);
    const coded = coding ? asset.coded[coding] : undefined;
    secure(reply)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('vary', 'accept-encoding')
      .type(asset.type);
    if (coding && coded) reply.header('content-encoding', coding);
    const body = coded ?? asset.body;
    reply.header('content-length', body.length);
    return body;
  });
};

export default web;

// Home page plugin: GET / (server-rendered, per request) and the hashed assets under /assets/. The
// sections come from the service definitions on ctx, each marked by whether this server serves it.
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { ByteLru } from '../../infra/cache/lru.ts';
import { negotiateEncoding } from '../../infra/http/encoding.ts';
import { type Assets, loadAssets } from '../../page/assets.ts';
import type { Coding } from '../../page/encoding.ts';
import { pageCsp, secure } from '../../page/headers.ts';
import { escapeHtml } from '../../page/html.ts';
import type { PageInput } from '../../page/section.ts';
import { isEnabled } from '../define.ts';
import { loadSections, pageConnect, renderPage } from './page.ts';

/**
 * The page is offered gzip only: it differs per caller, so its coding is made on the request (a
 * few hundred microseconds for 20 KB at the default level), where brotli's would cost far more.
 */
const GZIP = ['gzip'];
/** Gzipped pages kept by the address they show: a caller who comes back costs no compression. */
const GZIPPED_BYTES = 2 * 1024 * 1024;

const web: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/assets', 'text');
  let assets: Assets | null = null;
  try {
    assets = loadAssets(ctx.logger);
  } catch (err) {
    // Without the script and stylesheet the page still reads; the error says how to build them.
    ctx.logger.error({ err }, 'page assets missing; serving the page without them');
  }

  const enabled = new Set(ctx.services.filter((d) => isEnabled(ctx.config, d)).map((d) => d.name));

  const paths = assets
    ? { js: assets.paths['app.js'], css: assets.paths['app.css'], icon: assets.paths['favicon.svg'] }
    : null;

  // Everything on the page but the caller's address is fixed for the life of the process: render
  // it once around a marker and put the address in per request.
  const MARK = 'DEVUTIL-CLIENT-IP-SLOT';
  const input: PageInput = {
    urls: ctx.urls,
    config: ctx.config,
    services: ctx.services,
    enabled,
    clientIp: MARK,
    version: ctx.version,
    assets: paths,
  };
  const sections = await loadSections(ctx.services);
  const csp = pageCsp(pageConnect(input, sections));
  // Rendered on the first GET /, not at start-up: no other answer needs it (~30 ms of a first start).
  let page: { head: string; tail: string; hasSlot: boolean } | null = null;
  const rendered = () => {
    if (page) return page;
    const parts = renderPage(input, sections).split(MARK);
    // The address shows only in the IP section: with that utility off there is no slot to fill.
    if (parts.length > 2) throw new Error('the page has more than one client address slot');
    const [head = '', tail = ''] = parts;
    page = { head, tail, hasSlot: parts.length === 2 };
    return page;
  };
  const gzipped = new ByteLru<Buffer>(GZIPPED_BYTES, (b) => b.length);

  const home = { summary: 'Home page: every utility explained, with examples and try-it tools (HTML)' };
  app.get('/', { schema: home }, async (req, reply) => {
    secure(reply, csp).header('cache-control', 'no-store').header('vary', 'accept-encoding');
    reply.type('text/html; charset=utf-8');
    const { head, tail, hasSlot } = rendered();
    const ip = hasSlot ? escapeHtml(req.clientIp) : '';
    const body = head + ip + tail;
    if (negotiateEncoding(req.headers['accept-encoding'], GZIP) === null) return body;
    let gz = gzipped.get(ip);
    if (!gz) {
      gz = gzipSync(body);
      gzipped.set(ip, gz);
    }
    reply.header('content-encoding', 'gzip');
    return gz;
  });

  const asset = {
    summary: "The home page's script, stylesheet and icon (content-hashed names, cached for a year)",
  };
  app.get<{ Params: { name: string } }>('/assets/:name', { schema: asset }, async (req, reply) => {
    const asset = assets?.byName.get(req.params.name);
    if (!asset) {
      reply.code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-store');
      return 'no such asset\n';
    }
    // Names carry a content hash, so a response never goes stale.
    const coding = negotiateEncoding(
      req.headers['accept-encoding'],
      Object.keys(asset.coded),
    ) as Coding | null;
    const coded = coding ? asset.coded[coding] : undefined;
    secure(reply, csp)
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

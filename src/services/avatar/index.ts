// Avatar utility: Gravatar-compatible image URLs served from uploads, an upstream mirror or our own
// generators (issue 8). Wires the caches, the mirror, the blob-store uploads and the routes.
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import { Gauge } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import { Cache } from '../../infra/cache/cache.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { lazyImpl } from '../../infra/http/lazy.ts';
import { createMirrorStore, Mirror } from './mirror.ts';
import { avatarRoutes } from './routes.ts';
import type { Served } from './service.ts';
import type { Changed } from './uploads.ts';

const CHANGED = 'avatar:changed';

/** A change message from the bus (another instance, or anyone with access to Redis): checked. */
function parseChanged(text: string): Changed | null {
  try {
    const { sha256, md5 } = JSON.parse(text) as Record<string, unknown>;
    if (typeof sha256 !== 'string' || !/^([0-9a-f]{64})?$/.test(sha256)) return null;
    if (md5 !== null && (typeof md5 !== 'string' || !/^[0-9a-f]{32}$/.test(md5))) return null;
    return { sha256, md5 };
  } catch {
    return null;
  }
}

const avatar: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.avatar;
  // Gravatar answers errors in plain text; the image routes answer 404s the same way.
  app.envelopes.mount('/avatar', 'text');
  const root = join(ctx.dataDir, 'avatar');
  const log = ctx.logger.child({ svc: 'avatar' });

  // Counted on every answer and every cache lookup, the fast lane's repeats included: plain numbers,
  // reported when scraped (a prom-client child's inc() hashes its labels on every call).
  const servedBy = ctx.metrics.tally('devutil_avatar_responses_total', 'avatar answers by source', 'source', [
    'upload',
    'mirror',
    'github',
    'generated',
    'not_found',
    'redirect',
  ] as const) satisfies Record<Served, { inc(): void }>;
  const cacheBy = ctx.metrics.tally(
    'devutil_avatar_cache_total',
    'rendered avatar lookups by layer',
    'layer',
    ['memory', 'disk', 'render'] as const,
  );
  const upstream = ctx.metrics.counter('devutil_avatar_upstream_total', 'upstream mirror fetches', [
    'result',
  ]);
  const renderTime = ctx.metrics.histogram('devutil_avatar_render_seconds', 'time to render one avatar', []);

  // Mirrored originals are kept only in the disk cache: with no disk budget there is no mirror.
  const upstreams = (
    cfg.upstreams.length > 0 ? cfg.upstreams : cfg.upstream === 'none' ? [] : [cfg.upstream]
  ).map((u) => u.replace(/\/+$/, ''));
  if ((upstreams.length > 0 || cfg.github) && cfg.diskCacheBytes === 0)
    log.warn('avatar mirroring is off: it needs the disk cache (DEVUTIL_AVATAR_DISK_CACHE_BYTES is 0)');
  const originals =
    cfg.diskCacheBytes === 0 ? null : createMirrorStore(join(root, 'mirror'), cfg.diskCacheBytes, log);
  const common = {
    size: cfg.upstreamSize,
    timeoutMs: cfg.upstreamTimeoutMs,
    maxBytes: cfg.upstreamMaxBytes,
    maxPixels: cfg.maxInputPixels,
    minTtlSec: cfg.mirrorMinTtlSec,
    maxTtlSec: Math.max(cfg.mirrorMaxTtlSec, cfg.mirrorMinTtlSec),
    staleSec: cfg.staleSec,
    missTtlSec: cfg.missTtlSec,
    errorTtlSec: cfg.errorTtlSec,
    logger: log,
    userAgent: `devutil-avatar/${ctx.version}`,
    onResult: (result: string) => upstream.inc({ result }),
  };
  const rendered = new Cache<null>({
    name: 'avatar',
    dir: join(root, 'rendered'),
    memoryBytes: cfg.memCacheBytes,
    diskBytes: cfg.diskCacheBytes,
    onError: (err) =>
      log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'avatar disk cache failed'),
  });
  ctx.metrics.caches.push(rendered, ...(originals ? [originals] : []));
  // The lookup order, the renderers, the mirrors' fetchers and the uploads load with the first avatar
  // request (routes.ts), not at start; what must be there from the start stays here: the caches
  // (their sweeps and metrics), the change subscription and the gauges, which read an unloaded
  // service as nothing queued, nothing remembered.
  const core = lazyImpl('the avatar service', async () => {
    const [{ githubSource }, { parseAllowList }, { AvatarService }, { Uploads }] = await Promise.all([
      import('./github.ts'),
      import('./redirect.ts'),
      import('./service.ts'),
      import('./uploads.ts'),
    ]);
    // Each mirror's own outbound client (its host overrides differ), behind the egress guard.
    const egress = (resolve: readonly string[], caFile?: string) =>
      createEgress({
        resolve,
        policy: ctx.config.egress,
        timeoutMs: cfg.upstreamTimeoutMs,
        connections: 16,
        ...(caFile ? { caFile } : {}),
      });
    const mirror =
      originals && upstreams.length > 0
        ? new Mirror({ ...common, upstreams, cache: originals, http: egress(ctx.config.egress.resolve) })
        : null;
    // GitHub is reached like the proxy reaches it: the same overrides and extra CAs.
    const github =
      originals && cfg.github
        ? new Mirror({
            ...common,
            ...githubSource(cfg.githubUrl),
            cache: originals,
            http: egress(
              [...ctx.config.egress.resolve, ...ctx.config.proxy.resolve],
              ctx.config.proxy.upstreamCa,
            ),
            onResult: (result: string) => upstream.inc({ result: `github_${result}` }),
          })
        : null;
    // Looked up even with uploads switched off, so avatars stored earlier keep being served.
    const uploads = new Uploads(ctx.blobs, cfg.maxInputPixels, cfg.lookupTtlSec * 1000);
    let storeWarnedAt = 0;
    const svc = new AvatarService({
      uploads,
      mirror,
      github,
      cache: rendered,
      redirectRules: parseAllowList(cfg.redirectAllow),
      maxPixels: cfg.maxInputPixels,
      concurrency: cfg.renderConcurrency,
      queue: cfg.renderQueue,
      clientShare: cfg.clientShare / 100,
      storeTimeoutMs: cfg.storeTimeoutMs,
      onStoreError: (err) => {
        // Once a minute at most: an outage would otherwise log once per avatar asked for.
        const now = Date.now();
        if (now - storeWarnedAt < 60_000) return;
        storeWarnedAt = now;
        log.warn(
          { reason: err instanceof Error ? err.message : String(err) },
          'avatar uploads unavailable: serving mirrored and generated avatars without them',
        );
      },
      onCache: (layer) => cacheBy[layer].inc(),
      onRender: (s) => renderTime.observe({}, s),
    });
    uploads.onChange = (c) => ctx.broadcast.publish(CHANGED, JSON.stringify(c));
    return { svc, uploads, mirror, github };
  });

  new Gauge({
    name: 'devutil_avatar_render_queued',
    help: 'avatar renders waiting for a slot',
    registers: [ctx.metrics.registry],
    collect() {
      this.set(core.value?.svc.queued ?? 0);
    },
  });

  // An upload or delete on any instance is announced to all (Redis pub/sub): each forgets its
  // lookup of those hashes and evicts the renderings at once (unavatar#292, weblate#1192).
  ctx.broadcast.subscribe(CHANGED, {
    message: (text) => {
      const c = parseChanged(text);
      if (!c) return;
      // Nothing is remembered before the service loads.
      const loaded = core.value;
      loaded?.uploads.forget(c.sha256, c.md5);
      if (c.sha256) loaded?.svc.evict(c.sha256);
    },
    resync: () => core.value?.uploads.forgetAll(),
  });

  app.addHook('onClose', async () => {
    const loaded = await core.settled();
    await Promise.all([rendered.idle(), loaded?.mirror?.close(), loaded?.github?.close()]);
  });

  // Upload bodies: a raw image buffered up to the upload limit, or a multipart form read by the
  // one multipart reader with the same limit on its file (these parsers exist only inside this plugin).
  const parser = { parseAs: 'buffer' as const, bodyLimit: cfg.uploadMaxBytes };
  app.addContentTypeParser(/^image\/[a-z0-9.+-]+$/i, parser, (_req, body, done) => done(null, body));
  app.addContentTypeParser('application/octet-stream', parser, (_req, body, done) => done(null, body));
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: cfg.uploadMaxBytes, files: 4, fields: 16, fieldSize: 4096, parts: 20 },
  });

  avatarRoutes(app, ctx, core, (source) => servedBy[source].inc());
};

export default avatar;

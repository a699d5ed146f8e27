// Random-image utility: builds the sources in config order, the caches and the work pool, and
// wires metrics; routes live in routes.ts, the logic in service.ts.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { imageRoutes } from './routes.ts';
import { ImageService } from './service.ts';
import type { ImageSource } from './source.ts';

const image: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/rest/api/v1/image', 'v1');
  const cfg = ctx.config.image;
  const log = ctx.logger.child({ svc: 'image' });
  const m = ctx.metrics;
  const failures = m.counter('devutil_image_source_failures_total', 'image source failures (fell through)', [
    'source',
  ]);
  const served = m.counter('devutil_image_served_total', 'images served by source and cache tier', [
    'source',
    'cache',
  ]);
  const servedBy = new Map<string, ReturnType<typeof served.labels>>();
  const renders = m.histogram(
    'devutil_image_render_seconds',
    'source load + sharp render time',
    ['source'],
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  const running = m.gauge('devutil_image_pool_running', 'image operations running');
  const queued = m.gauge('devutil_image_pool_queued', 'image operations waiting for a slot');

  const svc = new ImageService(cfg, ctx.dataDir, log, {
    sourceFailed: (source) => failures.inc({ source }),
    served: (source, cache) => {
      // Label lookups cost more than the increment; keep one child per (source, tier).
      let c = servedBy.get(`${source}:${cache}`);
      if (!c) {
        c = served.labels(source, cache);
        servedBy.set(`${source}:${cache}`, c);
      }
      c.inc();
    },
    rendered: (source, s) => renders.observe({ source }, s),
    pool: (s) => {
      running.set(s.running);
      queued.set(s.queued);
    },
  });
  ctx.metrics.caches.push(svc.cache);
  const sources: ImageSource[] = [];
  // Each source's module is loaded only when the config uses it (by default only the generator).
  for (const name of new Set(cfg.sources)) {
    if (name === 'dir' && cfg.dir) {
      const { DirSource } = await import('./source-dir.ts');
      const dir = new DirSource({
        dir: cfg.dir,
        maxSourceBytes: cfg.maxSourceBytes,
        maxSourcePixels: cfg.maxSourcePixels,
        rescanSec: cfg.dirRescanSec,
        logger: log,
      });
      await dir.start();
      ctx.readiness.add(
        'image-dir',
        () =>
          dir.scanned
            ? { ok: true, detail: `${dir.count} images` }
            : { ok: false, detail: 'first scan running' },
        ['image'],
      );
      sources.push(dir);
    } else if (name === 'upstream' && cfg.upstreamUrl) {
      const { UpstreamSource } = await import('./source-upstream.ts');
      sources.push(
        new UpstreamSource({
          template: cfg.upstreamUrl,
          hosts: cfg.upstreamHosts,
          width: cfg.upstreamWidth,
          height: cfg.upstreamHeight,
          timeoutMs: cfg.upstreamTimeoutMs,
          maxBytes: cfg.maxSourceBytes,
          pool: cfg.randomPool,
          disk: svc.cache,
          userAgent: `devutil/${ctx.version}`,
          http: createEgress({
            resolve: ctx.config.egress.resolve,
            policy: ctx.config.egress,
            timeoutMs: cfg.upstreamTimeoutMs,
            connections: 16,
          }),
        }),
      );
    } else if (name === 'generator') {
      const { GeneratorSource } = await import('./source-generator.ts');
      sources.push(new GeneratorSource(cfg.randomPool));
    }
  }
  if (sources.length === 0)
    throw new Error(
      'image: no usable source (set DEVUTIL_IMAGE_DIR or DEVUTIL_IMAGE_UPSTREAM_URL, or keep "generator")',
    );
  svc.sources = sources;
  log.info({ sources: sources.map((s) => s.name) }, 'image sources ready');
  app.addHook('onClose', async () => svc.close());
  await imageRoutes(app, ctx, svc);
};

export default image;

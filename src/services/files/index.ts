// File storage utility: /api/file/<key> on the shared blob store (ctx.blobs, keys "files/<key>").
import cluster from 'node:cluster';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import { Gauge } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import { SpaceQuota } from '../../infra/limits/quota.ts';
import { Leases } from '../../infra/state/lease.ts';
import { DownloadCounter } from './download-counter.ts';
import { DownloadLimits } from './downloads.ts';
import { KeyWork } from './protect.ts';
import { fileRoutes } from './routes.ts';
import { FileStore } from './store.ts';
import { transferRoutes } from './transfer/routes.ts';
import { tusRoutes } from './tus/routes.ts';
import { UploadStore } from './tus/uploads.ts';

const files: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.files;
  const log = ctx.logger.child({ svc: 'files' });
  app.envelopes.mount('/api/file', 'file');
  app.envelopes.mount('/api/upload', 'file');
  // Bodies here are multipart streams: no parser may buffer them. Anything that is not multipart is
  // left unread and refused by the route with 400.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  await app.register(multipart, { throwFileSizeLimit: true });

  if (cfg.quotaBytes > 0 && !ctx.redis && cluster.isWorker)
    log.warn(
      'files quota without redis: each worker counts its own uploads; set redis.url or redis.sentinels to share it',
    );
  const store = new FileStore(ctx.blobs, cfg, log, {
    now: ctx.now,
    // Shared through Redis when configured, so Max-Downloads holds across instances.
    downloads: new DownloadCounter(ctx.state, cfg.resumeGraceSec * 1000),
    keys: new KeyWork({ concurrency: cfg.passwordConcurrency }),
  });
  if (cfg.accelRedirect && ctx.blobs.kind !== 'fs')
    log.warn('files.accelRedirect only applies to the fs storage backend; downloads are served as usual');
  if (ctx.config.storage.s3PresignedDownloads && ctx.blobs.kind !== 's3')
    log.warn('storage.s3PresignedDownloads only applies to the s3 backend; downloads are served as usual');
  const uploads = new UploadStore(ctx.blobs);
  const quota: SpaceQuota | null =
    cfg.quotaBytes > 0
      ? new SpaceQuota({
          limit: cfg.quotaBytes,
          state: ctx.state,
          pool: 'files',
          // Parts of unfinished resumable uploads take space too: they count against the same quota.
          list: async () => {
            const all = new Map<string, number>();
            for await (const [k, n] of store.listStored()) all.set(k, n);
            for await (const [k, n] of uploads.listParts()) all.set(k, n);
            return all;
          },
          head: async (key) => (await ctx.blobs.head(key))?.size ?? null,
          logger: log,
        })
      : null;
  store.quota = quota;
  uploads.quota = quota;
  // Read at scrape time: with Redis these are the figures of every instance together.
  const quotaGauge = (name: string, help: string, pick: (u: { used: number; reserved: number }) => number) =>
    new Gauge({
      name,
      help,
      registers: [ctx.metrics.registry],
      async collect() {
        const u = await quota?.usage().catch(() => null);
        if (u) this.set(pick(u));
      },
    });
  quotaGauge(
    'devutil_files_stored_bytes',
    'bytes the stored files take (counted when a quota is set)',
    (u) => u.used,
  );
  quotaGauge(
    'devutil_files_reserved_bytes',
    'bytes reserved against the files quota by uploads in progress',
    (u) => u.reserved,
  );
  ctx.metrics
    .gauge('devutil_files_quota_bytes', 'the files quota: total bytes stored files may take (0 = none)')
    .set(cfg.quotaBytes);
  const limits = new DownloadLimits(store, store.downloads, cfg.resumeGraceSec * 1000);
  const uploadMetrics = await fileRoutes(app, ctx, store, limits);
  // The transfer.sh way: PUT /<name>, multipart POST /, delete links, zips, ShareX and QR.
  await transferRoutes(app, ctx, store, limits, uploadMetrics);
  // Resumable uploads: parts on the shared blob store, one writer per upload through a shared lease.
  await tusRoutes(app, ctx, store, uploads, new Leases(ctx.state));

  let timer: NodeJS.Timeout | undefined;
  let sweeping = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      const n = (await store.sweep()) + (await limits.sweep());
      if (n) log.info({ removed: n }, 'expired files removed');
      const u = await uploads.sweep(store.now(), cfg.uploadExpirySec * 1000);
      if (u) log.info({ removed: u }, 'expired resumable uploads removed');
      // What crashed writers left in the store (s3: incomplete multipart uploads); logs for itself.
      await ctx.blobs.sweepAbandoned?.();
    } catch (err) {
      log.warn({ err }, 'file sweep failed');
    } finally {
      sweeping = false;
    }
  };
  let reconciling: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    // Counting what is stored can take a while on a big bucket: before the first upload, not during
    // it. With a ledger already in Redis this corrects what a crashed instance left behind.
    await quota?.reconcile().catch((err: unknown) => log.warn({ err }, 'files quota not counted yet'));
    if (quota) {
      reconciling = setInterval(() => {
        quota.reconcile().catch((err: unknown) => log.warn({ err }, 'files quota check failed'));
      }, cfg.quotaCheckSec * 1000);
      reconciling.unref();
    }
    // Always: files with Max-Days or Max-Downloads may exist whatever the retention.
    timer = setInterval(sweep, cfg.sweepIntervalSec * 1000);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(timer);
    clearInterval(reconciling);
    quota?.close();
  });
};

export default files;

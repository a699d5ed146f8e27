// File storage utility: /api/file/<key> on the shared blob store (ctx.blobs, keys "files/<key>").
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../infra/context.ts';
import { fileRoutes } from './routes.ts';
import { FileStore } from './store.ts';

const files: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.files;
  const log = ctx.logger.child({ svc: 'files' });
  app.envelopes.mount('/api/file', 'file');
  // Bodies here are multipart streams: no parser may buffer them. Anything that is not multipart is
  // left unread and refused by the route with 400.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  await app.register(multipart, { throwFileSizeLimit: true });

  const store = new FileStore(ctx.blobs, cfg, log);
  const usage = ctx.metrics.gauge('devutil_files_stored_bytes', 'bytes the stored files take', []);
  await fileRoutes(app, ctx, store);

  let timer: NodeJS.Timeout | undefined;
  let sweeping = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      const n = await store.sweep();
      if (n) log.info({ removed: n }, 'expired files removed');
      if (cfg.quotaBytes > 0) usage.set({}, await store.usage());
    } catch (err) {
      log.warn({ err }, 'file sweep failed');
    } finally {
      sweeping = false;
    }
  };
  app.addHook('onReady', async () => {
    if (cfg.quotaBytes > 0) usage.set({}, await store.usage());
    if (cfg.maxAgeSec > 0) {
      timer = setInterval(sweep, cfg.sweepIntervalSec * 1000);
      timer.unref();
    }
  });
  app.addHook('onClose', async () => clearInterval(timer));
};

export default files;

// POST/GET/HEAD/DELETE /api/file/<key> (docs/protocols/public-interface.md §2): thin HTTP layer over
// FileStore; the upload and the download each have their own module.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { downloadRoute } from './download-route.ts';
import type { DownloadLimits } from './downloads.ts';
import { badKey, type KeyReq, keyOf, params, tokenOf } from './http.ts';
import type { FileStore } from './store.ts';
import type { UploadMetrics } from './transfer/upload.ts';
import { uploadRoute } from './upload-route.ts';

export async function fileRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  limits: DownloadLimits,
): Promise<UploadMetrics> {
  const metrics = uploadRoute(app, ctx, files);
  downloadRoute(app, ctx, files, limits);

  app.delete(
    '/api/file/:key',
    { schema: { summary: 'Delete a file (owner token)', tags: ['files'], params } },
    async (req: KeyReq) => {
      const key = keyOf(req);
      await files.remove(key, tokenOf(req));
      return { success: true, message: 'file deleted', data: { key } };
    },
  );

  // Paths with more segments (a/b, ../x) are keys with a "/" in them: refuse them like any bad key.
  app.route({
    method: ['GET', 'HEAD', 'POST', 'DELETE'],
    url: '/api/file/*',
    schema: { hide: true },
    handler: async () => {
      throw badKey();
    },
  });
  return metrics;
}

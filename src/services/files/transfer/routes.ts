// The transfer.sh way's route table (docs/files.md "Uploads from curl -T, ShareX and scripts"):
// PUT /<name> and multipart POST / store under server-chosen keys and answer the link as text with
// X-Url-Delete; /delete/<keys>/<token>, /zip/<keys>, /qr.svg and the client files (.sxcu,
// upload.sh). The handlers are in upload.ts, form.ts, handlers.ts and clients.ts, loaded on the
// first request of one of these routes (infra/http/lazy.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { lazyImpl } from '../../../infra/http/lazy.ts';
import type { DownloadLimits } from '../downloads.ts';
import { contentDisposition } from '../names.ts';
import type { FileStore } from '../store.ts';
import type { KeysReq, QrReq } from './handlers.ts';
import type { NameReq, TransferDeps, UploadMetrics } from './upload.ts';

const tags = ['files'];
const nameParam = {
  type: 'object',
  properties: { name: { type: 'string', description: 'the file name (kept for the download)' } },
} as const;
const keysParams = {
  type: 'object',
  properties: {
    keys: { type: 'string', description: 'one key or several separated by commas' },
    token: { type: 'string', description: 'the owner token' },
  },
} as const;
const putDoc = {
  tags,
  description:
    'The file is the body (curl -T file HOST/). Answers the download link as text/plain, X-Url-Delete and X-Owner-Token; Max-Downloads and Max-Days headers apply; X-Encrypt-Password stores it as an OpenPGP message (gpg -d opens it; download with X-Decrypt-Password for the original).',
};
const postSchema = {
  tags,
  summary: 'Store the files of a form, each under a new random key, with a zip link for two or more',
  description:
    'Multipart, any field names. Answers the links one per line (the zip link last), X-Url-Zip, one X-Url-Delete and X-Owner-Token for all.',
  consumes: ['multipart/form-data'],
};
const deleteSchema = (summary: string) => ({ tags, summary, params: keysParams });
const zipSchema = {
  tags,
  summary: 'Download several files as one zip, streamed',
  params: { type: 'object', properties: { keys: keysParams.properties.keys } },
};
const qrSchema = {
  tags,
  summary: 'A QR code (SVG) of a link',
  querystring: { type: 'object', properties: { text: { type: 'string', description: 'the link' } } },
};

export async function transferRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  limits: DownloadLimits,
  metrics: UploadMetrics,
): Promise<void> {
  const cfg = ctx.config.files;
  const d: TransferDeps = { cfg, base: ctx.urls.base, files, limits, metrics };
  for (const p of ['/delete', '/zip', '/qr.svg', '/upload.sh', '/devutil.sxcu'])
    app.envelopes.mount(p, 'text');

  const impl = lazyImpl('transfer uploads', async () => {
    const [clients, { postForm }, handlers, { putFile }] = await Promise.all([
      import('./clients.ts'),
      import('./form.ts'),
      import('./handlers.ts'),
      import('./upload.ts'),
    ]);
    // The instance's own ShareX uploader and upload script (built once: the base URL is config).
    const sxcu = clients.sharexUploader(ctx.urls.base);
    const sxcuName = clients.sharexFilename(ctx.urls.base);
    const script = clients.uploadScript(ctx.urls.base);
    return { ...handlers, postForm, putFile, sxcu, sxcuName, script };
  });
  const put = impl.handler((i) => (req: NameReq, reply: FastifyReply) => i.putFile(d, req, reply));
  const putOpts = {
    onRequest: ctx.limiter.hook('files', cfg.rateLimit),
    config: { largeBody: true, envelope: 'text' as const },
  };
  app.put<{ Params: { name?: string } }>(
    '/',
    { ...putOpts, schema: { ...putDoc, summary: 'Store the body under a new random key (named "file")' } },
    put,
  );
  app.put<{ Params: { name?: string } }>(
    '/:name',
    {
      ...putOpts,
      config: { ...putOpts.config, anyPath: true },
      schema: {
        ...putDoc,
        summary: 'Store the body under a new random key (transfer.sh)',
        params: nameParam,
      },
    },
    put,
  );
  app.post(
    '/',
    { ...putOpts, schema: postSchema },
    impl.handler((i) => (req: FastifyRequest, reply: FastifyReply) => i.postForm(d, req, reply)),
  );

  app.get(
    '/delete/:keys/:token',
    { schema: deleteSchema('A page that asks before deleting') },
    impl.handler((i) => (req: FastifyRequest, reply: FastifyReply) => i.deletePage(d, req as KeysReq, reply)),
  );
  app.route({
    method: ['DELETE', 'POST'],
    url: '/delete/:keys/:token',
    schema: deleteSchema('Delete the files of a delete link'),
    handler: impl.handler(
      (i) => (req: FastifyRequest, reply: FastifyReply) => i.deleteFiles(d, req as KeysReq, reply),
    ),
  });
  app.get(
    '/zip/:keys',
    { schema: zipSchema },
    impl.handler((i) => (req: FastifyRequest, reply: FastifyReply) => i.zipFiles(d, req as KeysReq, reply)),
  );
  app.get<{ Querystring: { text?: unknown } }>(
    '/qr.svg',
    { onRequest: ctx.limiter.hook('files-qr', cfg.qrRateLimit), schema: qrSchema },
    impl.handler((i) => (req: QrReq, reply: FastifyReply) => i.qrCode(req, reply)),
  );

  app.get(
    '/devutil.sxcu',
    { schema: { tags, summary: "This instance's ShareX custom uploader" } },
    impl.handler(
      (i) => async (_req: FastifyRequest, reply: FastifyReply) =>
        reply
          .type('application/json; charset=utf-8')
          .header('content-disposition', contentDisposition(i.sxcuName))
          .header('cache-control', 'no-cache')
          .send(i.sxcu),
    ),
  );
  app.get(
    '/upload.sh',
    { schema: { tags, summary: "This instance's upload script (POSIX sh)" } },
    impl.handler(
      (i) => async (_req: FastifyRequest, reply: FastifyReply) =>
        reply.type('text/plain; charset=utf-8').header('cache-control', 'no-cache').send(i.script),
    ),
  );
}

// tus 1.0 resumable uploads at /api/upload/ (core, creation, termination, expiration): the bytes
// land as parts on the blob store, and the PATCH that completes an upload stores it as a normal
// /api/file/<key> through FileStore.upload (same limits, owner token, conflicts, compression).
// The 2.1 result: X-Upload-Result (base64 JSON) on that PATCH, and GET /api/upload/<id> afterwards.
// This is the route table; the handlers are in handlers.ts and create.ts, loaded on the first tus
// request (infra/http/lazy.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { lazyImpl } from '../../../infra/http/lazy.ts';
import type { Leases } from '../../../infra/state/lease.ts';
import type { FileStore } from '../store.ts';
import type { TusAccess } from './access.ts';
import type { IdReq, IdRoute } from './handlers.ts';
import { CORS_HEADERS, TUS_VERSION } from './protocol.ts';
import type { UploadStore } from './uploads.ts';

const tusHeaders: onRequestHookHandler = (_req, reply, done) => {
  reply.header('tus-resumable', TUS_VERSION);
  reply.headers(CORS_HEADERS);
  done();
};

export async function tusRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  uploads: UploadStore,
  leases: Leases,
): Promise<void> {
  const cfg = ctx.config.files;
  const impl = lazyImpl('tus uploads', async () => {
    const [{ TusAccess }, { create }, handlers] = await Promise.all([
      import('./access.ts'),
      import('./create.ts'),
      import('./handlers.ts'),
    ]);
    return { t: new TusAccess(cfg, files, uploads, leases), create, ...handlers };
  });
  type Impl = Awaited<ReturnType<typeof impl.get>>;
  // Creating an upload is an upload (the files budget); its requests have their own, larger one.
  const createLimit = ctx.limiter.hook('files', cfg.rateLimit);
  const requestLimit = ctx.limiter.hook('files-upload', cfg.uploadRateLimit);
  type Handler<R> = (t: TusAccess, req: R, reply: FastifyReply) => Promise<unknown>;
  const on = <R>(pick: (i: Impl) => Handler<R>) =>
    impl.handler((i) => (req: R, reply: FastifyReply) => pick(i)(i.t, req, reply));
  const options = on<FastifyRequest>((i) => i.discover);

  // The files utility's routes (resumable uploads end in a stored file), tagged like the rest of it.
  const tags = ['files'];
  const base = { onRequest: [tusHeaders, requestLimit] };
  // Clients send both spellings; /docs lists the one without the slash once (hide: the other).
  for (const [url, hide] of [
    ['/api/upload', false],
    ['/api/upload/', true],
  ] as const) {
    const also = hide ? {} : { description: 'also at /api/upload/' };
    app.options(
      url,
      { onRequest: tusHeaders, schema: { summary: 'tus discovery', tags, hide, ...also } },
      options,
    );
    app.post(
      url,
      { onRequest: [tusHeaders, createLimit], schema: { summary: 'tus creation', tags, hide, ...also } },
      on<FastifyRequest>((i) => i.create),
    );
  }
  const params = { type: 'object', properties: { id: { type: 'string' } } } as const;
  app.options(
    '/api/upload/:id',
    { onRequest: tusHeaders, schema: { summary: 'tus discovery', tags, params } },
    options,
  );
  app.head<IdRoute>(
    '/api/upload/:id',
    { ...base, schema: { summary: 'tus offset', tags, params } },
    on<IdReq>((i) => i.offset),
  );
  app.patch<IdRoute>(
    '/api/upload/:id',
    { ...base, config: { largeBody: true }, schema: { summary: 'tus append', tags, params } },
    on<IdReq>((i) => i.append),
  );
  app.delete<IdRoute>(
    '/api/upload/:id',
    { ...base, schema: { summary: 'tus termination', tags, params } },
    on<IdReq>((i) => i.terminate),
  );
  app.get<IdRoute>(
    '/api/upload/:id',
    {
      ...base,
      exposeHeadRoute: false,
      schema: { summary: 'the 2.1 result of a finished upload', tags, params },
    },
    on<IdReq>((i) => i.result),
  );
  // X-HTTP-Method-Override (tus 1.0 core) for environments that cannot send PATCH or DELETE.
  app.post<IdRoute>(
    '/api/upload/:id',
    {
      ...base,
      config: { largeBody: true },
      schema: { summary: 'tus PATCH, DELETE or HEAD through X-HTTP-Method-Override', tags, params },
    },
    on<IdReq>((i) => i.overridden),
  );
}

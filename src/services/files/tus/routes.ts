// tus 1.0 resumable uploads at /api/upload/ (core, creation, termination, expiration): the bytes
// land as parts on the blob store, and the PATCH that completes an upload stores it as a normal
// /api/file/<key> through FileStore.upload (same limits, owner token, conflicts, compression).
// The 2.1 result: X-Upload-Result (base64 JSON) on that PATCH, and GET /api/upload/<id> afterwards.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { humanBytes } from '../../../infra/config/schema.ts';
import {
  AppError,
  badRequest,
  conflict,
  notFound,
  tooLarge,
  unavailable,
} from '../../../infra/http/errors.ts';
import { QuotaFullError, type Reservation } from '../../../infra/limits/quota.ts';
import type { HeldLease, Leases } from '../../../infra/state/lease.ts';
import { tokenOf, uploadAnswer } from '../http.ts';
import { readLimits } from '../lifetime.ts';
import { sanitizeFilename, validKey } from '../names.ts';
import { type FileStore, insufficientStorage } from '../store.ts';
import {
  CORS_HEADERS,
  keyFromName,
  offsetHeader,
  PATCH_TYPE,
  PREFLIGHT_HEADERS,
  parseMetadata,
  TUS_EXTENSIONS,
  TUS_VERSION,
  UPLOAD_ID,
} from './protocol.ts';
import type { UploadState, UploadStore } from './uploads.ts';

type IdRoute = { Params: { id: string } };
type IdReq = FastifyRequest<IdRoute>;

const tusHeaders: onRequestHookHandler = (_req, reply, done) => {
  reply.header('tus-resumable', TUS_VERSION);
  reply.headers(CORS_HEADERS);
  done();
};

function requireTus(req: FastifyRequest): void {
  if (req.headers['tus-resumable'] !== TUS_VERSION)
    throw new AppError('TUS_VERSION', 412, `send Tus-Resumable: ${TUS_VERSION}`, {
      headers: { 'tus-version': TUS_VERSION },
    });
}

/**
 * The PATCH body as it arrives, at most `room` bytes, reserved against the quota as it comes; a
 * client that goes away ends it (what came is kept).
 */
export async function* received(
  raw: IncomingMessage,
  room: number,
  res: Reservation | null,
): AsyncGenerator<Buffer> {
  const it = raw[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let n = 0;
  let cut = false;
  for (;;) {
    let chunk: Buffer | null;
    if (cut) {
      // The connection was cut mid-body (tus 1.0: the server SHOULD keep the bytes it received).
      // The iterator gives up at once, but what the socket delivered before the cut may still wait
      // in the request's buffer (tens of KB when the disk is slower than the client): keep it too.
      chunk = raw.read() as Buffer | null;
      if (chunk === null) return;
    } else {
      let r: IteratorResult<Buffer>;
      try {
        r = await it.next();
      } catch {
        cut = true;
        continue;
      }
      if (r.done) return;
      chunk = r.value;
    }
    n += chunk.length;
    if (n > room) throw tooLarge('the body goes past Upload-Length', 'PAST_LENGTH');
    await res?.ensure(n);
    yield chunk;
  }
}

export async function tusRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  uploads: UploadStore,
  leases: Leases,
): Promise<void> {
  const cfg = ctx.config.files;
  const ttlMs = cfg.uploadExpirySec * 1000;
  const lockOpts = { waitMs: cfg.uploadLockWaitMs, ttlMs: cfg.uploadLockTtlMs };
  // Creating an upload is an upload (the files budget); its requests have their own, larger one.
  const createLimit = ctx.limiter.hook('files', cfg.rateLimit);
  const requestLimit = ctx.limiter.hook('files-upload', cfg.uploadRateLimit);
  const expires = (s: UploadState) => new Date(s.lastWrite + ttlMs).toUTCString();

  async function reserve(bytes: number): Promise<Reservation | null> {
    try {
      return files.quota ? await files.quota.reserve(bytes) : null;
    } catch (err) {
      throw err instanceof QuotaFullError ? insufficientStorage() : err;
    }
  }

  /** 507 at creation when the whole upload could not fit now (the parts reserve for real). */
  async function quotaCheck(length: number): Promise<void> {
    await (await reserve(length))?.release();
  }

  async function load(id: string): Promise<UploadState> {
    const s = UPLOAD_ID.test(id) ? await uploads.state(id) : null;
    if (!s) throw notFound('no upload with this id');
    if (files.now() > s.lastWrite + ttlMs) {
      await uploads.remove(id);
      throw notFound('no upload with this id (expired)');
    }
    return s;
  }

  /**
   * Runs `fn` holding upload `id`'s lease (shared through Redis): 423 when another request keeps it.
   * `fn` gets the lease's signal: it aborts the moment the lease is lost, and writes stop with it.
   */
  async function locked<T>(id: string, fn: (lease: AbortSignal) => Promise<T>): Promise<T> {
    if (!UPLOAD_ID.test(id)) throw notFound('no upload with this id');
    let held: HeldLease | null;
    try {
      held = await leases.acquire(`upload:${id}`, lockOpts);
    } catch (err) {
      throw unavailable('upload lock unavailable, try again shortly', 5, 'LOCK_UNAVAILABLE', { cause: err });
    }
    if (!held)
      throw new AppError('UPLOAD_LOCKED', 423, 'another request is using this upload; retry shortly', {
        headers: { 'retry-after': 1 },
      });
    try {
      return await fn(held.signal);
    } catch (err) {
      // Whatever failed after the lease was lost failed because of it: the client retries.
      if (held.signal.aborted && !(err instanceof AppError))
        throw unavailable('the upload lock was lost; retry', 1, 'LOCK_LOST', { cause: err });
      throw err;
    } finally {
      await held.release();
    }
  }

  const options = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(204)
      .headers({
        'tus-version': TUS_VERSION,
        'tus-extension': TUS_EXTENSIONS,
        'tus-max-size': cfg.maxBytes,
        ...PREFLIGHT_HEADERS,
      })
      .send();

  const create = async (req: FastifyRequest, reply: FastifyReply) => {
    requireTus(req);
    if (req.headers['upload-defer-length'] !== undefined || req.headers['upload-concat'] !== undefined)
      throw badRequest('Upload-Defer-Length and Upload-Concat are not supported', 'TUS_UNSUPPORTED');
    if (Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'])
      throw badRequest('send the bytes with PATCH (creation-with-upload is not offered)', 'TUS_UNSUPPORTED');
    const length = offsetHeader('Upload-Length', req.headers['upload-length']);
    if (length === null) throw badRequest('Upload-Length is required', 'NO_LENGTH');
    if (length > cfg.maxBytes) throw tooLarge(`file exceeds the upload limit of ${humanBytes(cfg.maxBytes)}`);
    const meta = parseMetadata(req.headers['upload-metadata']);
    const fields = new Map([...meta].map(([k, v]) => [k.toLowerCase(), [v]]));
    const limits = readLimits(req.headers, fields, cfg);
    const name = meta.get('filename') ?? meta.get('name');
    const key = meta.get('key') ?? (name ? keyFromName(sanitizeFilename(name, 'file')) : undefined);
    if (!key) throw badRequest('name the target key in Upload-Metadata ("key" or "filename")', 'NO_KEY');
    if (!validKey(key))
      throw badRequest(
        'invalid key: use 1-128 characters of A-Z a-z 0-9 . _ - not starting with "."',
        'BAD_KEY',
      );
    const filetype = meta.get('filetype') ?? meta.get('type');
    // Refused now rather than after the last byte; checked again when the upload completes.
    await files.assertWritable(key, tokenOf(req));
    await quotaCheck(length);
    const info = {
      length,
      key,
      filename: sanitizeFilename(name, key),
      filetype: filetype || undefined,
      metadata: typeof req.headers['upload-metadata'] === 'string' ? req.headers['upload-metadata'] : '',
      limits,
    };
    const id = await uploads.create(info);
    reply.code(201).header('location', `/api/upload/${id}`);
    // Nothing to send: the upload is complete on creation (as tusd does, and as tus-js-client
    // expects: it reports success on the 201 of an empty file and sends no PATCH).
    if (length === 0) {
      let out: Awaited<ReturnType<FileStore['upload']>>;
      try {
        out = await files.upload({
          key,
          file: Readable.from([]),
          filename: info.filename,
          declaredType: info.filetype,
          token: tokenOf(req),
          declaredBytes: 0,
          limits: () => limits,
        });
      } catch (err) {
        await uploads.remove(id);
        throw err;
      }
      const answer = uploadAnswer(key, out);
      await uploads.complete(
        { id, info, parts: [], offset: 0, lastWrite: files.now(), result: answer },
        answer,
      );
      if (out.ownerToken) reply.header('x-owner-token', out.ownerToken);
      return reply
        .header('upload-offset', 0)
        .header('x-upload-result', Buffer.from(JSON.stringify(answer)).toString('base64'))
        .send();
    }
    return reply.header('upload-expires', new Date(files.now() + ttlMs).toUTCString()).send();
  };

  const head = async (req: IdReq, reply: FastifyReply) => {
    requireTus(req);
    const s = await locked(req.params.id, () => load(req.params.id));
    reply.header('cache-control', 'no-store');
    reply.header('upload-offset', s.result ? s.info.length : s.offset);
    reply.header('upload-length', s.info.length);
    if (s.info.metadata) reply.header('upload-metadata', s.info.metadata);
    if (!s.result) reply.header('upload-expires', expires(s));
    return reply.code(200).send();
  };

  const patch = async (req: IdReq, reply: FastifyReply) => {
    requireTus(req);
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== PATCH_TYPE)
      throw new AppError('BAD_CONTENT_TYPE', 415, `PATCH bodies must be ${PATCH_TYPE}`);
    const at = offsetHeader('Upload-Offset', req.headers['upload-offset']);
    if (at === null) throw badRequest('Upload-Offset is required', 'NO_OFFSET');
    return locked(req.params.id, async (lease) => {
      const s = await load(req.params.id);
      if (s.result && at === s.info.length) {
        // A repeated final PATCH (its answer was lost): nothing to write, the result is known.
        reply.header('upload-offset', at);
        reply.header('x-upload-result', Buffer.from(JSON.stringify(s.result)).toString('base64'));
        return reply.code(204).send();
      }
      const have = s.result ? s.info.length : s.offset;
      if (at !== have) {
        reply.header('upload-offset', have);
        throw conflict(`Upload-Offset ${at} does not match the upload's offset ${have}`, 'OFFSET_MISMATCH');
      }
      const room = s.info.length - s.offset;
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > room)
        throw tooLarge('the body goes past Upload-Length', 'PAST_LENGTH');
      // The parts hold space like a stored file: reserved as they arrive (the declared length at once).
      const res = await reserve(Number.isFinite(declared) ? declared : 0);
      let part: Awaited<ReturnType<UploadStore['writePart']>>;
      try {
        part = await uploads.writePart(s.id, s.offset, received(req.raw, room, res), lease);
      } catch (err) {
        await res?.release();
        throw err instanceof QuotaFullError ? insufficientStorage() : err;
      }
      if (part) await res?.settle(part.blob);
      else await res?.release();
      const offset = s.offset + (part?.size ?? 0);
      reply.header('upload-offset', offset);
      if (!part || offset < s.info.length) {
        reply.header('upload-expires', new Date(files.now() + ttlMs).toUTCString());
        return reply.code(204).send();
      }
      const parts = [...s.parts, part];
      let out: Awaited<ReturnType<FileStore['upload']>>;
      try {
        out = await files.upload({
          key: s.info.key,
          file: uploads.open(parts),
          filename: s.info.filename,
          declaredType: s.info.filetype,
          token: tokenOf(req),
          declaredBytes: s.info.length,
          // The parts are counted already: the file takes their space over until they are deleted.
          credit: offset,
          signal: lease,
          limits: () => s.info.limits,
        });
      } catch (err) {
        // Not stored (409, 507, storage down): the upload goes back to where this PATCH started, so a
        // client that asks for the offset never takes an unstored upload for a finished one.
        await uploads.dropPart(part);
        reply.header('upload-offset', s.offset);
        throw err;
      }
      const answer = uploadAnswer(s.info.key, out);
      await uploads.complete({ ...s, parts }, answer);
      if (out.ownerToken) reply.header('x-owner-token', out.ownerToken);
      reply.header('x-upload-result', Buffer.from(JSON.stringify(answer)).toString('base64'));
      return reply.code(204).send();
    });
  };

  const terminate = async (req: IdReq, reply: FastifyReply) => {
    requireTus(req);
    await locked(req.params.id, async () => {
      await load(req.params.id);
      await uploads.remove(req.params.id);
    });
    return reply.code(204).send();
  };

  const result = async (req: IdReq, reply: FastifyReply) => {
    const s = await load(req.params.id);
    if (!s.result) throw conflict(`upload not complete: ${s.offset} of ${s.info.length} bytes`, 'INCOMPLETE');
    return reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(s.result);
  };

  // The files utility's routes (resumable uploads end in a stored file), tagged like the rest of it.
  const tags = ['files'];
  const base = { onRequest: [tusHeaders, requestLimit] };
  for (const url of ['/api/upload', '/api/upload/']) {
    app.options(url, { onRequest: tusHeaders, schema: { summary: 'tus discovery', tags } }, options);
    app.post(
      url,
      { onRequest: [tusHeaders, createLimit], schema: { summary: 'tus creation', tags } },
      create,
    );
  }
  const params = { type: 'object', properties: { id: { type: 'string' } } } as const;
  app.options(
    '/api/upload/:id',
    { onRequest: tusHeaders, schema: { summary: 'tus discovery', tags, params } },
    options,
  );
  app.head<IdRoute>('/api/upload/:id', { ...base, schema: { summary: 'tus offset', tags, params } }, head);
  app.patch<IdRoute>(
    '/api/upload/:id',
    { ...base, config: { largeBody: true }, schema: { summary: 'tus append', tags, params } },
    patch,
  );
  app.delete<IdRoute>(
    '/api/upload/:id',
    { ...base, schema: { summary: 'tus termination', tags, params } },
    terminate,
  );
  app.get<IdRoute>(
    '/api/upload/:id',
    {
      ...base,
      exposeHeadRoute: false,
      schema: { summary: 'the 2.1 result of a finished upload', tags, params },
    },
    result,
  );
  // X-HTTP-Method-Override (tus 1.0 core) for environments that cannot send PATCH or DELETE.
  app.post<IdRoute>(
    '/api/upload/:id',
    {
      ...base,
      config: { largeBody: true },
      schema: { summary: 'tus PATCH, DELETE or HEAD through X-HTTP-Method-Override', tags, params },
    },
    async (req: IdReq, reply) => {
      const m = String(req.headers['x-http-method-override'] ?? '').toUpperCase();
      if (m === 'PATCH') return patch(req, reply);
      if (m === 'DELETE') return terminate(req, reply);
      if (m === 'HEAD') return head(req, reply);
      throw badRequest(
        'POST to an upload needs X-HTTP-Method-Override: PATCH, DELETE or HEAD',
        'BAD_OVERRIDE',
      );
    },
  );
}

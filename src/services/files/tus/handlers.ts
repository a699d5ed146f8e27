// The tus 1.0 handlers (core, termination, expiration) and the 2.1 result; each takes the server's
// TusAccess. The PATCH that completes an upload stores it through FileStore.upload. Creation (POST)
// is in create.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../../infra/config/schema.ts';
import { AppError, badRequest, conflict, tooLarge } from '../../../infra/http/errors.ts';
import { QuotaFullError } from '../../../infra/limits/quota.ts';
import { tokenOf, uploadAnswer } from '../http.ts';
import { type FileStore, insufficientStorage } from '../store.ts';
import { received, requireTus, type TusAccess } from './access.ts';
import { offsetHeader, PATCH_TYPE, PREFLIGHT_HEADERS, TUS_EXTENSIONS, TUS_VERSION } from './protocol.ts';
import type { UploadStore } from './uploads.ts';

export type IdRoute = { Params: { id: string } };
export type IdReq = FastifyRequest<IdRoute>;
export type Stored = Awaited<ReturnType<FileStore['upload']>>;

/** The 2.1 result in a header (X-Upload-Result): base64 of its JSON. */
export const base64Json = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

/** OPTIONS: the server's tus version, extensions and size cap. */
export async function discover(t: TusAccess, _req: FastifyRequest, reply: FastifyReply) {
  return reply
    .code(204)
    .headers({
      'tus-version': TUS_VERSION,
      'tus-extension': TUS_EXTENSIONS,
      'tus-max-size': t.cfg.maxBytes,
      ...PREFLIGHT_HEADERS,
    })
    .send();
}

/** HEAD: where the upload stands. */
export async function offset(t: TusAccess, req: IdReq, reply: FastifyReply) {
  requireTus(req);
  const s = await t.locked(req.params.id, () => t.load(req.params.id));
  reply.header('cache-control', 'no-store');
  reply.header('upload-offset', s.result ? s.info.length : s.offset);
  reply.header('upload-length', s.info.length);
  if (s.info.metadata) reply.header('upload-metadata', s.info.metadata);
  if (!s.result) reply.header('upload-expires', t.expires(s));
  return reply.code(200).send();
}

/** PATCH: the next bytes at Upload-Offset; the last ones store the file. */
export async function append(t: TusAccess, req: IdReq, reply: FastifyReply) {
  const { cfg, files, uploads } = t;
  requireTus(req);
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== PATCH_TYPE) throw new AppError('BAD_CONTENT_TYPE', 415, `PATCH bodies must be ${PATCH_TYPE}`);
  const at = offsetHeader('Upload-Offset', req.headers['upload-offset']);
  if (at === null) throw badRequest('Upload-Offset is required', 'NO_OFFSET');
  return t.locked(req.params.id, async (lease) => {
    const s = await t.load(req.params.id);
    if (s.result && at === s.info.length) {
      // A repeated final PATCH (its answer was lost): nothing to write, the result is known.
      reply.header('upload-offset', at);
      reply.header('x-upload-result', base64Json(s.result));
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
    const res = await t.reserve(Number.isFinite(declared) ? declared : 0);
    let part: Awaited<ReturnType<UploadStore['writePart']>>;
    try {
      part = await uploads.writePart(s.id, s.offset, received(req.raw, room, res), lease);
    } catch (err) {
      await res?.release();
      throw err instanceof QuotaFullError ? insufficientStorage(cfg.quotaBytes) : err;
    }
    if (part) await res?.settle(part.blob);
    else await res?.release();
    const offset = s.offset + (part?.size ?? 0);
    reply.header('upload-offset', offset);
    if (!part || offset < s.info.length) {
      reply.header('upload-expires', t.expiresFromNow());
      return reply.code(204).send();
    }
    const parts = [...s.parts, part];
    let out: Stored;
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
    reply.header('x-upload-result', base64Json(answer));
    return reply.code(204).send();
  });
}

/** DELETE: the upload and its parts. */
export async function terminate(t: TusAccess, req: IdReq, reply: FastifyReply) {
  requireTus(req);
  await t.locked(req.params.id, async () => {
    await t.load(req.params.id);
    await t.uploads.remove(req.params.id);
  });
  return reply.code(204).send();
}

/** GET: the 2.1 result of a finished upload. */
export async function result(t: TusAccess, req: IdReq, reply: FastifyReply) {
  const s = await t.load(req.params.id);
  if (!s.result)
    throw conflict(
      `upload not complete: ${humanBytes(s.offset)} of ${humanBytes(s.info.length)}`,
      'INCOMPLETE',
    );
  return reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(s.result);
}

/** POST with X-HTTP-Method-Override (tus 1.0 core), for environments that cannot send PATCH or DELETE. */
export async function overridden(t: TusAccess, req: IdReq, reply: FastifyReply) {
  const m = String(req.headers['x-http-method-override'] ?? '').toUpperCase();
  if (m === 'PATCH') return append(t, req, reply);
  if (m === 'DELETE') return terminate(t, req, reply);
  if (m === 'HEAD') return offset(t, req, reply);
  throw badRequest('POST to an upload needs X-HTTP-Method-Override: PATCH, DELETE or HEAD', 'BAD_OVERRIDE');
}

// tus creation (POST): a new upload of Upload-Length bytes named by its Upload-Metadata, checked
// for its key, size, owner and quota before any byte is sent; an empty upload is stored at once.
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../../infra/config/schema.ts';
import { badRequest, tooLarge } from '../../../infra/http/errors.ts';
import { tokenOf, uploadAnswer } from '../http.ts';
import { readLimits } from '../lifetime.ts';
import { sanitizeFilename, validKey } from '../names.ts';
import { notSupported } from '../protect.ts';
import { requireTus, type TusAccess } from './access.ts';
import { base64Json, type Stored } from './handlers.ts';
import { keyFromName, offsetHeader, parseMetadata } from './protocol.ts';

/** POST: a new upload of Upload-Length bytes, named by its metadata; an empty one is stored at once. */
export async function create(t: TusAccess, req: FastifyRequest, reply: FastifyReply) {
  const { cfg, files, uploads } = t;
  requireTus(req);
  if (req.headers['upload-defer-length'] !== undefined || req.headers['upload-concat'] !== undefined)
    throw badRequest('Upload-Defer-Length and Upload-Concat are not supported', 'TUS_UNSUPPORTED');
  if (Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'])
    throw badRequest('send the bytes with PATCH (creation-with-upload is not offered)', 'TUS_UNSUPPORTED');
  // The password would be needed again at the last PATCH, and storing it meanwhile is out.
  if (req.headers['x-encrypt-password'] !== undefined) throw notSupported('resumable (tus) uploads');
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
  await t.quotaCheck(length);
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
  if (length > 0) return reply.header('upload-expires', t.expiresFromNow()).send();
  // Nothing to send: the upload is complete on creation (as tusd does, and as tus-js-client
  // expects: it reports success on the 201 of an empty file and sends no PATCH).
  let out: Stored;
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
  await uploads.complete({ id, info, parts: [], offset: 0, lastWrite: files.now(), result: answer }, answer);
  if (out.ownerToken) reply.header('x-owner-token', out.ownerToken);
  return reply.header('upload-offset', 0).header('x-upload-result', base64Json(answer)).send();
}

// POST /api/file/<key> (docs/protocols/public-interface.md §2): one multipart file part streamed into
// FileStore.upload, with the header and form-field limits.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { humanBytes } from '../../infra/config/schema.ts';
import { AppError, badRequest, tooLarge } from '../../infra/http/errors.ts';
import { multipartError } from '../../infra/http/multipart.ts';
import { docOnly } from '../../infra/http/openapi.ts';
import { type KeyReq, keyOf, params, tokenOf, uploadAnswer } from './http.ts';
import { readLimits } from './lifetime.ts';
import { sanitizeFilename } from './names.ts';
import { passwordOf } from './protect.ts';
import type { FileStore } from './store.ts';
import type { UploadMetrics } from './transfer/upload.ts';

/** Multipart framing around the file part: boundaries, part headers, a few small fields. */
const FRAMING_SLACK = 64 * 1024;

const fileInfo = {
  type: 'object',
  properties: {
    filename: { type: 'string' },
    mimetype: { type: 'string' },
    size: { type: 'integer', description: 'bytes' },
    original_size: { type: 'integer', description: 'bytes' },
    compressed: { type: 'boolean' },
    compressed_size: { type: 'integer', description: 'bytes stored' },
    compression_ratio: { type: 'string', description: 'space saved, e.g. 71.23%' },
  },
} as const;

const uploadSchema = {
  summary: 'Store a file (multipart, one file part named "file")',
  description:
    'A new key answers with X-Owner-Token; replacing an existing key needs it (X-Owner-Token or Authorization: Bearer), else 409.',
  tags: ['files'],
  consumes: ['multipart/form-data'],
  params,
  response: {
    200: {
      type: 'object',
      properties: {
        success: { type: 'boolean' },
        message: { type: 'string' },
        data: {
          type: 'object',
          properties: {
            key: { type: 'string' },
            file_info: fileInfo,
            lifetime: {
              type: 'object',
              description: 'only when Max-Downloads or Max-Days was given',
              properties: {
                max_downloads: { type: ['integer', 'null'] },
                max_days: { type: ['number', 'null'] },
                expires_at: { type: ['string', 'null'], description: 'ISO 8601' },
              },
            },
          },
        },
      },
    },
  },
} as const;

// The multipart body and the owner-token header, for the documentation only: the upload is read as
// a stream (req.parts()), so a body schema Fastify would validate cannot apply to it.
const uploadDoc = {
  body: {
    type: 'object',
    required: ['file'],
    properties: {
      file: {
        type: 'string',
        format: 'binary',
        contentMediaType: 'application/octet-stream',
        description: 'the file; its name is the download name',
      },
    },
  },
  headers: {
    type: 'object',
    properties: {
      'x-owner-token': {
        type: 'string',
        description: 'to replace a file you uploaded: the X-Owner-Token its first upload answered with',
      },
    },
  },
};

export function uploadRoute(app: FastifyInstance, ctx: ServiceContext, files: FileStore): UploadMetrics {
  const cfg = ctx.config.files;
  const limit = ctx.limiter.hook('files', cfg.rateLimit);
  const uploads = ctx.metrics.counter('devutil_files_uploads_total', 'file uploads by outcome', ['result']);
  const bytesIn = ctx.metrics.counter('devutil_files_upload_bytes_total', 'bytes uploaded (original)', []);

  // A refused upload is answered before its body is read; server.ts drains and closes the rest
  // (infra/http/request-bodies.ts lingerUnreadBody).
  app.post(
    '/api/file/:key',
    { onRequest: limit, schema: uploadSchema, config: { largeBody: true, ...docOnly(uploadDoc) } },
    async (req: KeyReq, reply) => {
      const key = keyOf(req);
      // Header limits are checked before the body is read; form fields join them at the end.
      readLimits(req.headers, new Map(), cfg);
      if (!req.isMultipart())
        throw badRequest('expected multipart/form-data with one file part named "file"');
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > cfg.maxBytes + FRAMING_SLACK)
        throw tooLarge(`file exceeds the upload limit of ${humanBytes(cfg.maxBytes)}`);
      // busboy only truncates at its limit (the error would surface when the body ends): one byte more
      // lets the store's own meter see the excess as it arrives and answer 413 at once.
      const password = passwordOf(req.headers, 'encrypt');
      const seal = password ? await files.keys.seal(req.clientKey, password) : undefined;
      const parts = req.parts({
        limits: { fileSize: cfg.maxBytes + 1, files: 2, fields: 16, fieldSize: 64 * 1024, parts: 32 },
      });
      const iter = parts[Symbol.asyncIterator]();
      // busboy reports a broken body (no boundary, truncated, bad part headers) as plain errors.
      const it = {
        next: () => iter.next().catch((err: unknown) => Promise.reject(multipartError(err))),
      };
      // Field names are Map keys, never object properties ("__proto__" is just an unknown field).
      const fields = new Map<string, string[]>();
      const addField = (p: { fieldname: string; value: unknown }) => {
        const name = p.fieldname.toLowerCase();
        fields.set(name, [...(fields.get(name) ?? []), String(p.value)]);
      };
      let first: Awaited<ReturnType<typeof it.next>>['value'];
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        if (r.value.type === 'file') {
          first = r.value;
          break;
        }
        addField(r.value);
      }
      if (first?.type !== 'file') throw badRequest('missing the file part named "file"', 'NO_FILE');
      if (first.fieldname !== 'file') {
        first.file.resume();
        throw badRequest('the file part must be named "file"', 'NO_FILE');
      }
      // Whatever follows the file: fields are ignored, a second file refuses the whole upload.
      const rest = (async () => {
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          if (r.value.type === 'file') {
            r.value.file.resume();
            throw badRequest('send exactly one file part', 'TWO_FILES');
          }
          addField(r.value);
        }
      })();
      rest.catch(() => {});
      let fileError: unknown;
      first.file.once('error', (e: unknown) => {
        fileError = e;
      });
      const aborted = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) aborted.abort();
      });
      try {
        const out = await files.upload({
          key,
          file: first.file,
          filename: sanitizeFilename(first.filename, key),
          declaredType: first.mimetype,
          token: tokenOf(req),
          ...(Number.isFinite(declared) ? { declaredBytes: declared } : {}),
          signal: aborted.signal,
          afterBody: () => rest,
          limits: () => readLimits(req.headers, fields, cfg),
          ...(seal ? { seal } : {}),
        });
        uploads.inc({ result: 'stored' });
        bytesIn.inc({}, out.info.size);
        if (out.ownerToken) reply.header('x-owner-token', out.ownerToken);
        reply.header('cache-control', 'no-store');
        return uploadAnswer(key, out);
      } catch (e) {
        first.file.resume();
        // The part's own failure (a truncated body): caught by the listener, or already emitted
        // before it was attached (a body that arrived whole), which the stream keeps as `errored`.
        const partError = fileError ?? first.file.errored;
        const err = partError && !(e instanceof AppError) ? multipartError(partError) : e;
        uploads.inc({ result: String((err as { status?: number }).status ?? 'error') });
        throw err;
      }
    },
  );
  return { uploads, bytesIn };
}

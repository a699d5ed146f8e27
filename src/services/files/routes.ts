// POST/GET/HEAD/DELETE /api/file/<key> (docs/protocols/public-interface.md §2): thin HTTP layer over
// FileStore.
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError, badRequest, notFound, tooLarge } from '../../errors.ts';
import { evaluate, type Validators } from '../../infra/http/conditional.ts';
import { acceptsEncoding } from '../../infra/http/encoding.ts';
import { multipartError } from '../../infra/http/multipart.ts';
import { docOnly } from '../../infra/http/openapi.ts';
import { contentRange, rangeOf } from '../../infra/http/range.ts';
import type { DownloadKind, DownloadLimits } from './downloads.ts';
import { DAY_MS, readLimits } from './lifetime.ts';
import { contentDisposition, sanitizeFilename, validKey } from './names.ts';
import { asciiDisposition, type OffloadConfig, offloadOf } from './offload.ts';
import type { FileStore, StoredFile, UploadResult } from './store.ts';

/** Multipart framing around the file part: boundaries, part headers, a few small fields. */
const FRAMING_SLACK = 64 * 1024;
// Stored HTML, SVG and scripts must never run on our origin, whatever a browser decides.
const CSP = "default-src 'none'; sandbox";

type KeyReq = FastifyRequest<{ Params: { key: string } }>;

const params = {
  type: 'object',
  properties: {
    key: { type: 'string', description: 'the key: 1-128 of A-Z a-z 0-9 . _ - not starting with "."' },
  },
} as const;

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

function keyOf(req: KeyReq): string {
  const key = req.params.key;
  if (!validKey(key)) throw badKey();
  return key;
}

function badKey() {
  return badRequest(
    'invalid key: use 1-128 characters of A-Z a-z 0-9 . _ - not starting with "."',
    'BAD_KEY',
  );
}

/** The owner token from X-Owner-Token or Authorization: Bearer. */
export function tokenOf(req: FastifyRequest): string | undefined {
  const h = req.headers['x-owner-token'];
  if (typeof h === 'string' && h.trim()) return h.trim();
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m?.[1];
}

/** The 2.1 upload result (plus data.lifetime when limits were set): one shape for POST and tus. */
export function uploadAnswer(key: string, out: UploadResult) {
  const data = { key, file_info: out.info, ...(out.lifetime ? { lifetime: out.lifetime } : {}) };
  return { success: true, message: 'file uploaded', data };
}

const etagOf = (f: StoredFile, encoded: boolean) =>
  `"${f.sha256.slice(0, 32)}${encoded ? `-${f.encoding}` : ''}"`;

export async function fileRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  limits: DownloadLimits,
): Promise<void> {
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
        throw tooLarge(`file exceeds the upload limit of ${cfg.maxBytes} bytes`);
      // busboy only truncates at its limit (the error would surface when the body ends): one byte more
      // lets the store's own meter see the excess as it arrives and answer 413 at once.
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
        });
        uploads.inc({ result: 'stored' });
        bytesIn.inc({}, out.info.size);
        if (out.ownerToken) reply.header('x-owner-token', out.ownerToken);
        reply.header('cache-control', 'no-store');
        return uploadAnswer(key, out);
      } catch (e) {
        first.file.resume();
        const err = fileError && !(e instanceof AppError) ? multipartError(fileError) : e;
        uploads.inc({ result: String((err as { status?: number }).status ?? 'error') });
        throw err;
      }
    },
  );

  const offload: OffloadConfig = {
    accelPrefix: ctx.blobs.kind === 'fs' ? cfg.accelRedirect : '',
    presign: ctx.blobs.kind === 's3' && ctx.config.storage.s3PresignedDownloads,
  };

  const download = async (req: KeyReq, reply: FastifyReply) => {
    const key = keyOf(req);
    for (let attempt = 0; attempt < 3; attempt++) {
      const file = await files.find(key);
      if (!file) throw notFound('no file with this key');
      const encoded =
        file.encoding !== 'identity' && acceptsEncoding(req.headers['accept-encoding'], file.encoding);
      const etag = etagOf(file, encoded);
      // A compressed file's two forms differ only in coding: If-None-Match may name either.
      const v: Validators = {
        etag,
        lastModified: file.lastModified.getTime(),
        ...(file.encoding !== 'identity' ? { sameAs: [etagOf(file, !encoded)] } : {}),
      };
      const pre = evaluate(req.method, req.headers, v);
      // Several ranges are answered with the whole (RFC 9110 14.2 lets a server ignore Range): a
      // compressed file would be decoded from its start once per range.
      const asked = rangeOf(req.method, req.headers, v, file.size);
      const range = asked.kind === 'multiple' ? ({ kind: 'whole' } as const) : asked;
      // Max-Downloads: only a GET that sends the body counts (downloads.ts has the whole rule).
      const kind: DownloadKind =
        req.method === 'HEAD' || pre !== 'pass' || range.kind === 'unsatisfiable'
          ? 'peek'
          : range.kind === 'single' && range.start > 0
            ? 'continue'
            : 'new';
      // Ranges address the decoded bytes, so `curl -C -` resumes the same file it started.
      const raw = encoded && range.kind === 'whole';
      const length = range.kind === 'single' ? range.end - range.start + 1 : raw ? file.stored : file.size;
      const slice = range.kind === 'single' ? { range: { start: range.start, end: range.end } } : {};
      // A counted download opens its bytes before it takes its count: a download that finishes
      // first and deletes the used-up file cannot take them from one counted before it.
      const limited = file.lifetime?.maxDownloads != null;
      let body: Readable | null = null;
      if (limited && kind !== 'peek' && length > 0) {
        body = await files.open(file, { raw, ...slice });
        if (!body) continue; // replaced meanwhile: start over
      }
      let admitted: Awaited<ReturnType<DownloadLimits['admit']>>;
      try {
        admitted = await limits.admit(file, kind, req.clientKey);
      } catch (err) {
        body?.destroy();
        throw err;
      }
      if (admitted.remaining !== null) reply.header('x-remaining-downloads', admitted.remaining);
      const end = file.lifetime?.expiresAt;
      if (end) reply.header('x-remaining-days', Math.max(0, (end - files.now()) / DAY_MS).toFixed(3));
      reply.header('etag', etag);
      reply.header('last-modified', file.lastModified.toUTCString());
      reply.header('cache-control', 'no-cache');
      reply.header('accept-ranges', 'bytes');
      reply.header('content-disposition', contentDisposition(file.filename));
      reply.header('content-security-policy', CSP);
      if (file.encoding !== 'identity') reply.header('vary', 'accept-encoding');
      if (pre === 'not-modified') return reply.code(304).send();
      if (pre === 'failed')
        throw new AppError(
          'PRECONDITION_FAILED',
          412,
          'the file does not match If-Match or If-Unmodified-Since',
        );
      reply.type(file.mimetype);
      // A file with Max-Downloads is always sent from here: a presigned URL could be fetched again
      // and again, and its final byte is what deletes the last allowed download.
      const off = limited ? null : offloadOf(file, req, offload);
      if (off?.kind === 'accel') {
        // nginx sends the body file (Range included); the headers are ours (README: nginx offload).
        if (off.encoded) reply.header('content-encoding', file.encoding);
        reply.removeHeader('accept-ranges'); // nginx adds its own
        return reply.header('x-accel-redirect', off.location).send();
      }
      if (off?.kind === 'presign') {
        const url = await files.presign(file, {
          expiresSec: ctx.config.storage.s3PresignExpirySec,
          contentType: file.mimetype,
          contentDisposition: asciiDisposition(file.filename),
          cacheControl: 'no-cache',
          ...(off.encoded ? { contentEncoding: file.encoding } : {}),
        });
        if (url) {
          for (const h of ['etag', 'last-modified', 'accept-ranges', 'content-disposition', 'content-type'])
            reply.removeHeader(h);
          // The URL is a short-lived secret: no cache may keep this answer.
          return reply.code(302).header('cache-control', 'no-store').header('location', url).send();
        }
      }
      if (range.kind === 'unsatisfiable') {
        reply.header('content-range', contentRange(null, file.size));
        reply.removeHeader('content-type');
        reply.removeHeader('content-disposition');
        return reply.code(416).send();
      }
      if (raw) reply.header('content-encoding', file.encoding);
      if (range.kind === 'single') reply.code(206).header('content-range', contentRange(range, file.size));
      reply.header('content-length', length);
      if (req.method === 'HEAD') return reply.send();
      // A counted download that sends the final byte is done; the last one done deletes the file.
      if (admitted.tracked && (range.kind === 'whole' || range.end === file.size - 1))
        reply.raw.once('finish', () => {
          limits.finish(file).catch((err: unknown) => req.log.warn({ err }, 'used-up file not deleted'));
        });
      if (length === 0) return reply.send();
      body ??= await files.open(file, { raw, ...slice });
      if (body) return reply.send(body);
    }
    throw notFound('no file with this key');
  };

  app.route({
    method: ['GET', 'HEAD'],
    url: '/api/file/:key',
    schema: {
      summary: 'Download a file under its original name (Range, ETag, br for clients that accept it)',
      tags: ['files'],
      params,
    },
    handler: download,
  });

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
}

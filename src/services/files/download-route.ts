// GET/HEAD /api/file/<key> (docs/protocols/public-interface.md §2): conditional requests, one Range,
// the stored coding for clients that accept it, Max-Downloads counting, and the offloads (nginx
// X-Accel-Redirect, S3 presigned URLs).
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { evaluate, type Validators } from '../../infra/http/conditional.ts';
import { acceptsEncoding } from '../../infra/http/encoding.ts';
import { AppError, notFound } from '../../infra/http/errors.ts';
import { contentRange, rangeOf } from '../../infra/http/range.ts';
import type { DownloadKind, DownloadLimits } from './downloads.ts';
import { type KeyReq, keyOf, params } from './http.ts';
import { DAY_MS } from './lifetime.ts';
import { contentDisposition } from './names.ts';
import { asciiDisposition, type OffloadConfig, offloadOf } from './offload.ts';
import { passwordOf, sealedView } from './protect.ts';
import type { FileStore, StoredFile } from './store.ts';

// Stored HTML, SVG and scripts must never run on our origin, whatever a browser decides.
const CSP = "default-src 'none'; sandbox";

const etagOf = (f: StoredFile, encoded: boolean) =>
  `"${f.sha256.slice(0, 32)}${encoded ? `-${f.encoding}` : ''}"`;

export function downloadRoute(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  limits: DownloadLimits,
): void {
  const cfg = ctx.config.files;
  const offload: OffloadConfig = {
    accelPrefix: ctx.blobs.kind === 'fs' ? cfg.accelRedirect : '',
    presign: ctx.blobs.kind === 's3' && ctx.config.storage.s3PresignedDownloads,
  };

  const download = async (req: KeyReq, reply: FastifyReply) => {
    const key = keyOf(req);
    const password = passwordOf(req.headers, 'decrypt');
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await files.find(key);
      if (!found) throw notFound('no file with this key');
      // A protected file: the original with its password (403 with another), else the stored
      // OpenPGP message as <name>.gpg. A password for a file without one is ignored.
      const secret =
        found.protection && password
          ? await files.keys.unlock(req.clientKey, found.protection, password)
          : undefined;
      const file = found.protection && !secret ? sealedView(found) : found;
      const encoded =
        file.encoding !== 'identity' && acceptsEncoding(req.headers['accept-encoding'], file.encoding);
      const etag = secret ? `"${file.sha256.slice(0, 32)}-decrypted"` : etagOf(file, encoded);
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
      const opening = { raw, ...slice, ...(secret ? { key: secret } : {}) };
      if (limited && kind !== 'peek' && length > 0) {
        body = await files.open(file, opening);
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
      if (found.protection) {
        reply.header('vary', 'x-decrypt-password');
        // The original of a protected file is for whoever gave the password: no cache keeps it.
        if (secret) reply.header('cache-control', 'no-store');
      }
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
      const off = limited || secret ? null : offloadOf(file, req, offload);
      if (off?.kind === 'accel') {
        // nginx sends the body file (Range included); the headers are ours (docs/deployment.md, nginx offload).
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
      body ??= await files.open(file, opening);
      if (body) return reply.send(body);
    }
    throw notFound('no file with this key');
  };

  // Each password costs a key derivation, and a wrong one is a guess: those downloads are counted.
  const passwordLimit = ctx.limiter.hook('files-password', cfg.passwordRateLimit);
  app.route({
    method: ['GET', 'HEAD'],
    url: '/api/file/:key',
    onRequest: async function (req, reply) {
      if (req.headers['x-decrypt-password'] !== undefined) await passwordLimit.call(this, req, reply);
    },
    schema: {
      summary: 'Download a file under its original name (Range, ETag, br for clients that accept it)',
      tags: ['files'],
      params,
    },
    handler: download,
  });
}

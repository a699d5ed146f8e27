// POST / of the transfer.sh way (curl -F, ShareX's form body): every file part of one multipart
// form stored under its own key, one owner token for all, under a cap on the files together.
import { pipeline, type Readable, Transform } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../../infra/config/schema.ts';
import { AppError, badRequest, tooLarge } from '../../../infra/http/errors.ts';
import { multipartError } from '../../../infra/http/multipart.ts';
import { readLimits } from '../lifetime.ts';
import { sanitizeFilename } from '../names.ts';
import { passwordOf } from '../protect.ts';
import { newOwnerToken } from '../store.ts';
import { answer, store, type TransferDeps } from './upload.ts';

/** Multipart framing around the file parts: boundaries, part headers, a few small fields. */
const FRAMING_SLACK = 64 * 1024;

/** Counts the bytes of every file of one upload together; past `max` the current file fails with 413. */
function totalCap(max: number) {
  let total = 0;
  return () =>
    new Transform({
      transform(chunk: Buffer, _e, cb) {
        total += chunk.length;
        if (total > max)
          return cb(
            tooLarge(`the files of one upload exceed ${humanBytes(max)} together`, 'BUNDLE_TOO_LARGE'),
          );
        cb(null, chunk);
      },
    });
}

/**
 * curl -F file=@a -F file=@b HOST/: every file part (any field name) under its own key, one owner
 * token for all; two or more make a bundle with a zip link. A failure removes what was stored.
 */
export async function postForm(d: TransferDeps, req: FastifyRequest, reply: FastifyReply): Promise<string> {
  const { cfg, files } = d;
  readLimits(req.headers, new Map(), cfg);
  if (!req.isMultipart())
    throw badRequest(
      'expected multipart/form-data (curl -F file=@name HOST/), or PUT /<name> with the file as the body',
    );
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > cfg.bundleMaxBytes + FRAMING_SLACK)
    throw tooLarge(
      `the files of one upload exceed ${humanBytes(cfg.bundleMaxBytes)} together`,
      'BUNDLE_TOO_LARGE',
    );
  const password = passwordOf(req.headers, 'encrypt');
  // One key for the files of one upload (each message has its own random prefix).
  const seal = password ? await files.keys.seal(req.clientKey, password) : undefined;
  const parts = req.parts({
    limits: {
      fileSize: cfg.maxBytes + 1,
      files: cfg.bundleMaxFiles + 1,
      fields: 16,
      fieldSize: 64 * 1024,
      parts: cfg.bundleMaxFiles + 17,
    },
  });
  const fields = new Map<string, string[]>();
  const token = newOwnerToken();
  const capped = totalCap(cfg.bundleMaxBytes);
  const stored: string[] = [];
  // The part being stored: its own failure (a truncated body) is the client's 400.
  let current: Readable | undefined;
  try {
    const it = parts[Symbol.asyncIterator]();
    for (;;) {
      const r = await it.next().catch((err: unknown) => Promise.reject(multipartError(err)));
      if (r.done) break;
      const part = r.value;
      if (part.type === 'field') {
        const name = part.fieldname.toLowerCase();
        if (stored.length && /^max[-_](downloads|days)$/.test(name))
          throw badRequest('give Max-Downloads and Max-Days before the files', 'BAD_LIMIT');
        fields.set(name, [...(fields.get(name) ?? []), String(part.value)]);
        continue;
      }
      if (stored.length >= cfg.bundleMaxFiles) {
        part.file.resume();
        throw tooLarge(`too many files: at most ${cfg.bundleMaxFiles} in one upload`, 'TOO_MANY_FILES');
      }
      const lim = readLimits(req.headers, fields, cfg);
      current = part.file;
      const file = pipeline(part.file, capped(), () => {}) as unknown as Readable;
      const filename = sanitizeFilename(part.filename, 'file');
      const { key } = await store(d, req, reply, {
        file,
        filename,
        type: part.mimetype,
        token,
        limits: () => lim,
        seal,
      });
      stored.push(key);
    }
  } catch (err) {
    // All or nothing: the files of a refused upload are not left behind.
    for (const key of stored) await files.remove(key, token).catch(() => {});
    throw current?.errored && !(err instanceof AppError) ? multipartError(current.errored) : err;
  }
  if (!stored.length) throw badRequest('no file part in the form', 'NO_FILE');
  return answer(d, reply, stored, token);
}

// The upload handlers of the transfer.sh way: PUT /<name> (the body is the file) and multipart
// POST / (every file part under its own key, a zip link for two or more). Both store through
// FileStore.upload: the same quota, size cap, rate limit, lifetimes and tokens as the file API.
import { pipeline, type Readable, Transform } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import type { Config } from '../../../config.ts';
import { humanBytes } from '../../../infra/config/schema.ts';
import { AppError, badRequest, tooLarge } from '../../../infra/http/errors.ts';
import { multipartError } from '../../../infra/http/multipart.ts';
import type { DownloadLimits } from '../downloads.ts';
import { type Limits, readLimits } from '../lifetime.ts';
import { sanitizeFilename } from '../names.ts';
import { passwordOf, type Seal } from '../protect.ts';
import { type FileStore, newOwnerToken } from '../store.ts';
import { linksFor, randomKey } from './links.ts';

/** Multipart framing around the file parts: boundaries, part headers, a few small fields. */
const FRAMING_SLACK = 64 * 1024;

export interface UploadMetrics {
  uploads: Counter<'result'>;
  bytesIn: Counter<never>;
}

/** What the transfer handlers work with: built once per server by transferRoutes. */
export interface TransferDeps {
  cfg: Config['files'];
  /** The public base URL the links are built on. */
  base: string;
  files: FileStore;
  limits: DownloadLimits;
  metrics: UploadMetrics;
}

export type NameReq = FastifyRequest<{ Params: { name?: string } }>;

interface StoreOptions {
  file: Readable;
  filename: string;
  type: string | undefined;
  token: string;
  declared?: number;
  limits: () => Limits;
  seal: Seal | undefined;
}

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

/** Stores one body under a fresh key with `o.token`; gives the key back. */
async function store(
  d: TransferDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  o: StoreOptions,
): Promise<{ key: string; size: number }> {
  const aborted = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) aborted.abort();
  });
  const key = randomKey(o.filename);
  try {
    const out = await d.files.upload({
      key,
      file: o.file,
      filename: o.filename,
      declaredType: o.type,
      token: undefined,
      ownerToken: o.token,
      ...(o.declared !== undefined ? { declaredBytes: o.declared } : {}),
      signal: aborted.signal,
      limits: o.limits,
      ...(o.seal ? { seal: o.seal } : {}),
    });
    d.metrics.uploads.inc({ result: 'stored' });
    d.metrics.bytesIn.inc({}, out.info.size);
    req.log.info({ key, size: out.info.size, ...(o.seal ? { encrypted: true } : {}) }, 'file stored');
    return { key, size: out.info.size };
  } catch (err) {
    o.file.resume();
    d.metrics.uploads.inc({ result: String((err as { status?: number }).status ?? 'error') });
    throw err;
  }
}

/** The links of stored files as text, one per line, with the headers ShareX and scripts read. */
function answer(d: TransferDeps, reply: FastifyReply, keys: string[], token: string): string {
  const l = linksFor(d.base, keys, token);
  reply.header('x-url-delete', l.delete);
  reply.header('x-owner-token', token);
  if (l.zip) reply.header('x-url-zip', l.zip);
  reply.header('cache-control', 'no-store');
  // A single file's link in a header as well: what the ShareX uploader reads, whatever the body.
  if (l.files.length === 1 && l.files[0]) reply.header('x-url-file', l.files[0]);
  reply.type('text/plain; charset=utf-8');
  // The links one per line, each ending with a newline so the shell prompt after `curl -T` starts
  // on a line of its own; $(curl ...) drops it.
  return `${[...l.files, ...(l.zip ? [l.zip] : [])].join('\n')}\n`;
}

/** curl -T file HOST/ (curl adds the file name), curl -T - HOST/name, ShareX's Binary body. */
export async function putFile(d: TransferDeps, req: NameReq, reply: FastifyReply): Promise<string> {
  const { cfg, files } = d;
  const headerLimits = readLimits(req.headers, new Map(), cfg);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > cfg.maxBytes)
    throw tooLarge(`file exceeds the upload limit of ${humanBytes(cfg.maxBytes)}`);
  const filename = sanitizeFilename(req.params.name, 'file');
  const password = passwordOf(req.headers, 'encrypt');
  const seal = password ? await files.keys.seal(req.clientKey, password) : undefined;
  const token = newOwnerToken();
  const { key } = await store(d, req, reply, {
    file: req.raw,
    filename,
    type: req.headers['content-type'],
    token,
    ...(Number.isFinite(declared) ? { declared } : {}),
    limits: () => headerLimits,
    seal,
  });
  return answer(d, reply, [key], token);
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

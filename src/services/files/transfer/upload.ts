// The upload handlers of the transfer.sh way: PUT /<name> (the body is the file) here, multipart
// POST / (every file part under its own key, a zip link for two or more) in form.ts. Both store
// through store(), i.e. FileStore.upload: the same quota, size cap, rate limit, lifetimes and
// tokens as the file API, and answer the links through answer().
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import type { Config } from '../../../config.ts';
import { humanBytes } from '../../../infra/config/schema.ts';
import { tooLarge } from '../../../infra/http/errors.ts';
import type { DownloadLimits } from '../downloads.ts';
import { type Limits, readLimits } from '../lifetime.ts';
import { sanitizeFilename } from '../names.ts';
import { passwordOf, type Seal } from '../protect.ts';
import { type FileStore, newOwnerToken } from '../store.ts';
import { linksFor, randomKey } from './links.ts';

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

/** Stores one body under a fresh key with `o.token`; gives the key back. */
export async function store(
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
export function answer(d: TransferDeps, reply: FastifyReply, keys: string[], token: string): string {
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

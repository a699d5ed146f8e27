// The transfer.sh way (docs/files.md "Uploads from curl -T, ShareX and scripts"): PUT /<name> and
// multipart POST / store under server-chosen keys and answer the link as text with X-Url-Delete;
// /delete/<keys>/<token>, /zip/<keys>, /qr.svg and the client files (.sxcu, upload.sh). Every
// upload goes through FileStore.upload: the same quota, size cap, rate limit, lifetimes and tokens.
import { pipeline, type Readable, Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import type { ServiceContext } from '../../../context.ts';
import { humanBytes } from '../../../infra/config/schema.ts';
import { AppError, badRequest, forbidden, notFound, tooLarge } from '../../../infra/http/errors.ts';
import { multipartError } from '../../../infra/http/multipart.ts';
import { html } from '../../../page/html.ts';
import type { Admission, DownloadLimits } from '../downloads.ts';
import { type Limits, readLimits } from '../lifetime.ts';
import { contentDisposition, sanitizeFilename } from '../names.ts';
import { type FileStore, newOwnerToken, type StoredFile, tokenMatches } from '../store.ts';
import { QR_MAX_CHARS, qrSvg, sharexFilename, sharexUploader, uploadScript } from './clients.ts';
import { linksFor, parseKeys, randomKey } from './links.ts';
import { zipEntryNames, zipStream } from './zip.ts';

/** Multipart framing around the file parts: boundaries, part headers, a few small fields. */
const FRAMING_SLACK = 64 * 1024;

export interface UploadMetrics {
  uploads: Counter<'result'>;
  bytesIn: Counter<never>;
}

type NameReq = FastifyRequest<{ Params: { name?: string } }>;

const tags = ['files'];
const nameParam = {
  type: 'object',
  properties: { name: { type: 'string', description: 'the file name (kept for the download)' } },
} as const;
const keysParams = {
  type: 'object',
  properties: {
    keys: { type: 'string', description: 'one key or several separated by commas' },
    token: { type: 'string', description: 'the owner token' },
  },
} as const;
const putDoc = {
  tags,
  description:
    'The file is the body (curl -T file HOST/). Answers the download link as text/plain, X-Url-Delete and X-Owner-Token; Max-Downloads and Max-Days headers apply.',
};
type KeysReq = FastifyRequest<{ Params: { keys: string; token?: string } }>;

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

export async function transferRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  files: FileStore,
  limits: DownloadLimits,
  metrics: UploadMetrics,
): Promise<void> {
  const cfg = ctx.config.files;
  const base = ctx.urls.base;
  const limit = ctx.limiter.hook('files', cfg.rateLimit);
  for (const p of ['/delete', '/zip', '/qr.svg', '/upload.sh', '/devutil.sxcu'])
    app.envelopes.mount(p, 'text');

  /** Stores one body under a fresh key with `token`; gives the key back. */
  const store = async (
    req: FastifyRequest,
    reply: FastifyReply,
    o: {
      file: Readable;
      filename: string;
      type: string | undefined;
      token: string;
      declared?: number;
      limits: () => Limits;
    },
  ): Promise<{ key: string; size: number }> => {
    const aborted = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) aborted.abort();
    });
    const key = randomKey(o.filename);
    try {
      const out = await files.upload({
        key,
        file: o.file,
        filename: o.filename,
        declaredType: o.type,
        token: undefined,
        ownerToken: o.token,
        ...(o.declared !== undefined ? { declaredBytes: o.declared } : {}),
        signal: aborted.signal,
        limits: o.limits,
      });
      metrics.uploads.inc({ result: 'stored' });
      metrics.bytesIn.inc({}, out.info.size);
      req.log.info({ key, size: out.info.size }, 'file stored');
      return { key, size: out.info.size };
    } catch (err) {
      o.file.resume();
      metrics.uploads.inc({ result: String((err as { status?: number }).status ?? 'error') });
      throw err;
    }
  };

  const answer = (reply: FastifyReply, keys: string[], token: string) => {
    const l = linksFor(base, keys, token);
    reply.header('x-url-delete', l.delete);
    reply.header('x-owner-token', token);
    if (l.zip) reply.header('x-url-zip', l.zip);
    reply.header('cache-control', 'no-store');
    reply.type('text/plain; charset=utf-8');
    // As transfer.sh: the body is the link itself, nothing around it (ShareX's {response}).
    return [...l.files, ...(l.zip ? [l.zip] : [])].join('\n');
  };

  // curl -T file HOST/ (curl adds the file name), curl -T - HOST/name, ShareX's Binary body.
  const put = async (req: NameReq, reply: FastifyReply) => {
    const headerLimits = readLimits(req.headers, new Map(), cfg);
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > cfg.maxBytes)
      throw tooLarge(`file exceeds the upload limit of ${humanBytes(cfg.maxBytes)}`);
    const filename = sanitizeFilename(req.params.name, 'file');
    const token = newOwnerToken();
    const { key } = await store(req, reply, {
      file: req.raw,
      filename,
      type: req.headers['content-type'],
      token,
      ...(Number.isFinite(declared) ? { declared } : {}),
      limits: () => headerLimits,
    });
    return answer(reply, [key], token);
  };
  const putOpts = { onRequest: limit, config: { largeBody: true, envelope: 'text' as const } };
  app.put<{ Params: { name?: string } }>(
    '/',
    { ...putOpts, schema: { ...putDoc, summary: 'Store the body under a new random key (named "file")' } },
    put,
  );
  app.put<{ Params: { name?: string } }>(
    '/:name',
    {
      ...putOpts,
      config: { ...putOpts.config, anyPath: true },
      schema: {
        ...putDoc,
        summary: 'Store the body under a new random key (transfer.sh)',
        params: nameParam,
      },
    },
    put,
  );

  // curl -F file=@a -F file=@b HOST/: every file part (any field name) under its own key, one owner
  // token for all; two or more make a bundle with a zip link. A failure removes what was stored.
  const postSchema = {
    tags,
    summary: 'Store the files of a form, each under a new random key, with a zip link for two or more',
    description:
      'Multipart, any field names. Answers the links one per line (the zip link last), X-Url-Zip, one X-Url-Delete and X-Owner-Token for all.',
    consumes: ['multipart/form-data'],
  };
  app.post('/', { ...putOpts, schema: postSchema }, async (req, reply) => {
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
        const { key } = await store(req, reply, {
          file,
          filename,
          type: part.mimetype,
          token,
          limits: () => lim,
        });
        stored.push(key);
      }
    } catch (err) {
      // All or nothing: the files of a refused upload are not left behind.
      for (const key of stored) await files.remove(key, token).catch(() => {});
      throw current?.errored && !(err instanceof AppError) ? multipartError(current.errored) : err;
    }
    if (!stored.length) throw badRequest('no file part in the form', 'NO_FILE');
    return answer(reply, stored, token);
  });

  /** The live files of a key list, all of them, else 404. */
  const findAll = async (keys: string[]): Promise<StoredFile[]> => {
    const found = await Promise.all(keys.map((k) => files.find(k)));
    const gone = keys.filter((_, i) => !found[i]);
    if (gone.length) throw notFound(`no file with the key ${gone.slice(0, 3).join(', ')}`);
    return found as StoredFile[];
  };

  const owned = async (req: KeysReq): Promise<StoredFile[]> => {
    const keys = parseKeys(req.params.keys, cfg.bundleMaxFiles);
    const found = await findAll(keys);
    // Every file is checked before any is deleted: a wrong token deletes nothing.
    if (!found.every((f) => tokenMatches(req.params.token, f.ownerHash)))
      throw forbidden('this delete link does not match the files', 'BAD_TOKEN');
    return found;
  };

  const privatePage = (reply: FastifyReply) =>
    reply
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .header('x-robots-tag', 'noindex')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");

  // A delete link opened in a browser (ShareX shows it as a link) asks first: link previews and
  // prefetchers GET it, and a GET must not delete.
  const deleteSchema = (summary: string) => ({ tags, summary, params: keysParams });
  app.get(
    '/delete/:keys/:token',
    { schema: deleteSchema('A page that asks before deleting') },
    async (req: KeysReq, reply) => {
      const found = await owned(req);
      privatePage(reply).type('text/html; charset=utf-8');
      return html`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Delete ${found.length === 1 ? 'a file' : `${found.length} files`}</title>
<body style="font:16px system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em">
<h1>Delete ${found.length === 1 ? 'this file' : `these ${found.length} files`}?</h1>
<ul>${found.map((f) => html`<li>${f.filename} (${humanBytes(f.size)})</li>`)}</ul>
<form method="post"><button type="submit">Delete</button></form>
<p>With curl: <code>curl -X DELETE &lt;this address&gt;</code></p></body></html>
`.value;
    },
  );

  const remove = async (req: KeysReq, reply: FastifyReply) => {
    const found = await owned(req);
    for (const f of found) await files.remove(f.key, req.params.token);
    req.log.info({ keys: found.map((f) => f.key) }, 'files deleted');
    privatePage(reply).type('text/plain; charset=utf-8');
    return `deleted ${found.length === 1 ? '1 file' : `${found.length} files`}\n`;
  };
  app.route({
    method: ['DELETE', 'POST'],
    url: '/delete/:keys/:token',
    schema: deleteSchema('Delete the files of a delete link'),
    handler: remove,
  });

  // Several files as one zip: stored entries (the bytes as uploaded, decoded) streamed one after
  // another, so the length is known up front and nothing is held in memory.
  const zipSchema = {
    tags,
    summary: 'Download several files as one zip, streamed',
    params: { type: 'object', properties: { keys: keysParams.properties.keys } },
  };
  app.get('/zip/:keys', { schema: zipSchema }, async (req: KeysReq, reply) => {
    const keys = parseKeys(req.params.keys, cfg.bundleMaxFiles);
    const found = await findAll(keys);
    const total = found.reduce((n, f) => n + f.size, 0);
    if (total > cfg.bundleMaxBytes)
      throw tooLarge(
        `these files exceed ${humanBytes(cfg.bundleMaxBytes)} together: download them one by one`,
        'BUNDLE_TOO_LARGE',
      );
    // A zip download is a download of each file: Max-Downloads counts it (HEAD counts nothing).
    // Every file is checked first, so one used up refuses the zip before any other count is taken.
    for (const f of found) await limits.admit(f, 'peek', req.clientKey);
    const admitted: Admission[] = [];
    if (req.method !== 'HEAD')
      for (const f of found) admitted.push(await limits.admit(f, 'new', req.clientKey));
    const names = zipEntryNames(found.map((f) => f.filename));
    const { stream, length } = await zipStream(
      found.map((f, i) => ({
        name: names[i] ?? f.key,
        size: f.size,
        mtime: f.lastModified,
        deflate: false,
        open: async () => {
          const body = await files.open(f, { raw: false });
          if (!body) throw new AppError('GONE', 410, `${f.key} was replaced or deleted meanwhile`);
          return body;
        },
      })),
      6,
    );
    reply.header('content-type', 'application/zip');
    reply.header('content-disposition', contentDisposition(`files-${keys[0]?.replace(/\..*$/, '')}.zip`));
    reply.header('cache-control', 'no-store');
    if (length !== null) reply.header('content-length', length);
    if (req.method === 'HEAD') {
      stream.destroy();
      return reply.send();
    }
    reply.raw.once('finish', () => {
      found.forEach((f, i) => {
        if (admitted[i]?.tracked)
          limits.finish(f).catch((err: unknown) => req.log.warn({ err }, 'used-up file not deleted'));
      });
    });
    return reply.send(stream);
  });

  // A QR code for a link (the page shows one beside each link it gives).
  app.get<{ Querystring: { text?: unknown } }>(
    '/qr.svg',
    {
      onRequest: ctx.limiter.hook('files-qr', cfg.qrRateLimit),
      schema: {
        tags,
        summary: 'A QR code (SVG) of a link',
        querystring: { type: 'object', properties: { text: { type: 'string', description: 'the link' } } },
      },
    },
    async (req, reply) => {
      const text = req.query.text;
      if (typeof text !== 'string' || !text) throw badRequest('give the text to encode: /qr.svg?text=...');
      if (text.length > QR_MAX_CHARS) throw tooLarge(`text longer than ${QR_MAX_CHARS} characters`);
      reply.header('cache-control', 'public, max-age=86400');
      reply.header('content-security-policy', "default-src 'none'");
      return reply.type('image/svg+xml').send(qrSvg(text));
    },
  );

  // The instance's own ShareX uploader and upload script (built once: the base URL is config).
  const sxcu = sharexUploader(base);
  const sxcuName = sharexFilename(base);
  app.get(
    '/devutil.sxcu',
    { schema: { tags, summary: "This instance's ShareX custom uploader" } },
    async (_req, reply) =>
      reply
        .type('application/json; charset=utf-8')
        .header('content-disposition', contentDisposition(sxcuName))
        .header('cache-control', 'no-cache')
        .send(sxcu),
  );
  const script = uploadScript(base);
  app.get(
    '/upload.sh',
    { schema: { tags, summary: "This instance's upload script (POSIX sh)" } },
    async (_req, reply) =>
      reply.type('text/plain; charset=utf-8').header('cache-control', 'no-cache').send(script),
  );
}

// The transfer.sh way's link handlers: the delete page and delete, the zip of several files and
// the QR code of a link. Each takes the TransferDeps transferRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../../infra/config/schema.ts';
import { AppError, badRequest, forbidden, notFound, tooLarge } from '../../../infra/http/errors.ts';
import { html } from '../../../page/html.ts';
import type { Admission } from '../downloads.ts';
import { contentDisposition } from '../names.ts';
import { sealedView } from '../protect.ts';
import { type StoredFile, tokenMatches } from '../store.ts';
import { QR_MAX_CHARS, qrSvg } from './clients.ts';
import { parseKeys } from './links.ts';
import type { TransferDeps } from './upload.ts';
import { zipEntryNames, zipStream } from './zip.ts';

export type KeysReq = FastifyRequest<{ Params: { keys: string; token?: string } }>;
export type QrReq = FastifyRequest<{ Querystring: { text?: unknown } }>;

/** The live files of a key list, all of them, else 404. */
async function findAll(d: TransferDeps, keys: string[]): Promise<StoredFile[]> {
  const found = await Promise.all(keys.map((k) => d.files.find(k)));
  const gone = keys.filter((_, i) => !found[i]);
  if (gone.length) throw notFound(`no file with the key ${gone.slice(0, 3).join(', ')}`);
  return found as StoredFile[];
}

/** The files of a delete link, every one checked against its token before any is touched. */
async function owned(d: TransferDeps, req: KeysReq): Promise<StoredFile[]> {
  const keys = parseKeys(req.params.keys, d.cfg.bundleMaxFiles);
  const found = await findAll(d, keys);
  // Every file is checked before any is deleted: a wrong token deletes nothing.
  if (!found.every((f) => tokenMatches(req.params.token, f.ownerHash)))
    throw forbidden('this delete link does not match the files', 'BAD_TOKEN');
  return found;
}

function privatePage(reply: FastifyReply): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-robots-tag', 'noindex')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
}

/**
 * A delete link opened in a browser (ShareX shows it as a link) asks first: link previews and
 * prefetchers GET it, and a GET must not delete.
 */
export async function deletePage(d: TransferDeps, req: KeysReq, reply: FastifyReply): Promise<string> {
  const found = await owned(d, req);
  privatePage(reply).type('text/html; charset=utf-8');
  return html`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Delete ${found.length === 1 ? 'a file' : `${found.length} files`}</title>
<body style="font:16px system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em">
<h1>Delete ${found.length === 1 ? 'this file' : `these ${found.length} files`}?</h1>
<ul>${found.map((f) => html`<li>${f.filename} (${humanBytes(f.size)})</li>`)}</ul>
<form method="post"><button type="submit">Delete</button></form>
<p>With curl: <code>curl -X DELETE &lt;this address&gt;</code></p></body></html>
`.value;
}

/** DELETE or POST on a delete link: all its files, or none when the token does not match. */
export async function deleteFiles(d: TransferDeps, req: KeysReq, reply: FastifyReply): Promise<string> {
  const found = await owned(d, req);
  for (const f of found) await d.files.remove(f.key, req.params.token);
  req.log.info({ keys: found.map((f) => f.key) }, 'files deleted');
  privatePage(reply).type('text/plain; charset=utf-8');
  return `deleted ${found.length === 1 ? '1 file' : `${found.length} files`}\n`;
}

/**
 * Several files as one zip: stored entries (the bytes as uploaded, decoded) streamed one after
 * another, so the length is known up front and nothing is held in memory.
 */
export async function zipFiles(d: TransferDeps, req: KeysReq, reply: FastifyReply): Promise<FastifyReply> {
  const { cfg, files, limits } = d;
  const keys = parseKeys(req.params.keys, cfg.bundleMaxFiles);
  // A protected file goes in as its stored message (<name>.gpg): a zip carries no password.
  const found = (await findAll(d, keys)).map((f) => (f.protection ? sealedView(f) : f));
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
}

/** A QR code for a link (the page shows one beside each link it gives). */
export async function qrCode(req: QrReq, reply: FastifyReply): Promise<FastifyReply> {
  const text = req.query.text;
  if (typeof text !== 'string' || !text) throw badRequest('give the text to encode: /qr.svg?text=...');
  if (text.length > QR_MAX_CHARS) throw tooLarge(`text longer than ${QR_MAX_CHARS} characters`);
  reply.header('cache-control', 'public, max-age=86400');
  reply.header('content-security-policy', "default-src 'none'");
  return reply.type('image/svg+xml').send(qrSvg(text));
}

// A recipient token's multipart upload, checked while it streams (docs/telegram.md, Recipient
// tokens): the body is written anew with a boundary of devutil's own, chat_id first, then the query's
// parameters, then each field as RecipientParams passes it and each file as it arrives. Names and
// file names are written so that no reader can split them (docs/protocols/telegram-bot-api.md §6); a
// field is plain text (Telegram expands an application/x-www-form-urlencoded part into parameters of
// its own, a JSON part would reach us parsed); a refused part ends the upload before Telegram could
// act on it. Framework-free.
import { randomBytes } from 'node:crypto';
import { Ambiguous, asText, type RecipientParams } from './recipient-params.ts';

export { Ambiguous, Refused } from './recipient-params.ts';

/** One part as @fastify/multipart's req.parts() gives it (a part is a file when it has a filename). */
export type Part =
  | { type: 'field'; fieldname: string; mimetype: string; value: unknown }
  | { type: 'file'; fieldname: string; filename: string; mimetype: string; file: AsyncIterable<Buffer> };

// File names and types travel in a header: keep them printable and free of what a reader splits on.
const safeName = (s: string) => s.replace(/[\u0000-\u001f\u007f"\\;%]/g, '_').slice(0, 255) || 'file';
const MIME = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}$/;

/**
 * The multipart body of `parts` (and the `query` parameters already passed by `params`) with the
 * rules applied: the content type to send and an async iterable of its bytes. A refusal or a failed
 * part throws from the iterable (the upload upstream fails with it) and is kept in `failure()`.
 */
export function confineMultipart(
  parts: AsyncIterable<Part>,
  params: RecipientParams,
  query: Record<string, unknown>,
): { contentType: string; body: AsyncIterable<Buffer>; failure(): unknown } {
  const boundary = `devutil-${randomBytes(16).toString('hex')}`;
  let failed: unknown = null;
  const head = (name: string, file?: { filename: string; mimetype: string }) =>
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"` +
        (file
          ? `; filename="${safeName(file.filename)}"\r\nContent-Type: ${MIME.test(file.mimetype) ? file.mimetype : 'application/octet-stream'}`
          : '') +
        '\r\n\r\n',
    );
  const CRLF = Buffer.from('\r\n');
  const field = (name: string, v: unknown) => Buffer.concat([head(name), Buffer.from(asText(v)), CRLF]);
  async function* body(): AsyncIterable<Buffer> {
    try {
      for (const [k, v] of Object.entries({ chat_id: params.chatId, ...query })) yield field(k, v);
      for await (const p of parts) {
        if (p.type === 'field') {
          if (!/^text\/plain$/i.test(p.mimetype))
            throw new Ambiguous(`a part without a filename is a text field; ${p.mimetype} is not text/plain`);
          const v = params.add(p.fieldname, p.value);
          if (v !== undefined && p.fieldname !== 'chat_id') yield field(p.fieldname, v);
        } else {
          params.file(p.fieldname);
          yield head(p.fieldname, p);
          for await (const chunk of p.file) yield chunk;
          yield CRLF;
        }
      }
      yield Buffer.from(`--${boundary}--\r\n`);
    } catch (err) {
      failed ??= err;
      throw err;
    }
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: body(), failure: () => failed };
}

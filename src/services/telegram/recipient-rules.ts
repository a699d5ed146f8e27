// What a recipient token's call may say (docs/telegram.md, Recipient tokens): its one chat and no
// other. chat_id is filled in when absent and must name that chat when given; a reply may quote only
// that chat (reply_parameters.chat_id would copy a message of another chat in); business
// connections (sending as someone else) are refused. Multipart uploads are checked while they
// stream: the body is written anew, chat_id first, each file passed through as it arrives, and a
// refused field ends the upload before Telegram could act on it. Framework-free.
import { randomBytes } from 'node:crypto';
import { chatRef, type Params } from './api-body.ts';

export class Refused extends Error {
  override name = 'Refused';
}

/** Throws Refused when a parameter reaches outside chat `chat` (a numeric id as text). */
export function checkParam(name: string, value: unknown, chat: string): void {
  if (name === 'chat_id') {
    if (chatRef(value) !== chat)
      throw new Refused(`this recipient token sends only to chat ${chat}; leave chat_id out or give that id`);
  } else if (name === 'reply_parameters') {
    let v = value;
    if (typeof v === 'string') {
      try {
        v = JSON.parse(v);
      } catch {
        return; // Telegram refuses it itself
      }
    }
    const other = (v as { chat_id?: unknown } | null)?.chat_id;
    if (other !== undefined && chatRef(other) !== chat)
      throw new Refused('a reply may quote only the chat of this recipient token');
  } else if (name === 'business_connection_id') {
    throw new Refused('recipient tokens cannot send through a business connection');
  }
}

/** The parameters with every rule applied and chat_id set; throws Refused. */
export function confine(params: Params, chat: string): Params {
  for (const [k, v] of Object.entries(params)) checkParam(k, v, chat);
  return {
    ...params,
    chat_id: /^-?\d+$/.test(chat) && Number.isSafeInteger(Number(chat)) ? Number(chat) : chat,
  };
}

/** One part as @fastify/multipart's req.parts() gives it. */
export type Part =
  | { type: 'field'; fieldname: string; value: unknown }
  | { type: 'file'; fieldname: string; filename: string; mimetype: string; file: AsyncIterable<Buffer> };

// A header value inside quotes: no quote, CR or LF may end it early (what browsers do to names).
const quoted = (s: string) => s.replace(/"/g, '%22').replace(/[\r\n]/g, ' ');

/**
 * The multipart body of `parts` with the rules applied, as a new body with its own boundary: the
 * content type to send and an async iterable of its bytes. A refusal or a failed part throws from
 * the iterable (the upload upstream fails with it) and is kept in `failure()` for the route.
 */
export function confineMultipart(
  parts: AsyncIterable<Part>,
  chat: string,
): { contentType: string; body: AsyncIterable<Buffer>; failure(): unknown } {
  const boundary = `devutil-${randomBytes(16).toString('hex')}`;
  let failed: unknown = null;
  const head = (name: string, file?: { filename: string; mimetype: string }) =>
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"` +
        (file
          ? `; filename="${quoted(file.filename)}"\r\nContent-Type: ${quoted(file.mimetype || 'application/octet-stream')}`
          : '') +
        '\r\n\r\n',
    );
  const CRLF = Buffer.from('\r\n');
  async function* body(): AsyncIterable<Buffer> {
    try {
      yield Buffer.concat([head('chat_id'), Buffer.from(chat), CRLF]);
      for await (const p of parts) {
        if (p.type === 'field') {
          checkParam(p.fieldname, p.value, chat);
          if (p.fieldname === 'chat_id') continue;
          yield Buffer.concat([head(p.fieldname), Buffer.from(String(p.value)), CRLF]);
        } else {
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

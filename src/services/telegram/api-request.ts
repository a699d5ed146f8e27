// One Bot API call as devutil sends it on (an Outgoing), built from the client's request: a bot
// key's call passed on as the client made it (the query string, the body byte for byte, an upload
// streamed under its cap), a recipient token's call written anew from the parameters its rules
// passed (recipient-params.ts), in every encoding (docs/protocols/telegram-bot-api.md §1).
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../infra/config/schema.ts';
import { BodyTooLarge, capStream, readCapped } from '../../infra/egress/capped-body.ts';
import { AppError, badRequest, forbidden, tooLarge } from '../../infra/http/errors.ts';
import { BadBody, bodyEntries, bodyParams, type Encoding, formPairs, type Params } from './api-body.ts';
import { Ambiguous, RecipientParams, Refused } from './recipient-params.ts';
import { confineMultipart, type Part } from './recipient-rules.ts';

export interface Outgoing {
  /** The query string passed on (a recipient call's parameters all travel in its body). */
  query: URLSearchParams;
  body: Buffer | Readable | null;
  contentType?: string;
  contentLength?: number;
  /** The parameters of a JSON or form body, as Telegram reads them (the chat, a poll's timeout). */
  params: Params;
  /** What ended a streamed upload (a refusal, a cap), read once the upstream call is over. */
  failure(): unknown;
}

export interface Limits {
  maxUploadBytes: number;
  apiMaxBodyBytes: number;
  bodyTimeoutMs: number;
}

const none = () => null;

/** A bot key's call, as the client made it. */
export async function keyCall(req: FastifyRequest, enc: Encoding, lim: Limits): Promise<Outgoing> {
  const query = new URLSearchParams(queryOf(req.url));
  const contentType = req.headers['content-type'];
  if (enc === 'multipart') {
    const declared = declaredLength(req, lim);
    let over: AppError | null = null;
    const body = capStream(req.raw, lim.maxUploadBytes, () => {
      over = uploadTooLarge(lim);
      return over;
    });
    return {
      query,
      body,
      ...(contentType ? { contentType } : {}),
      ...(declared !== undefined ? { contentLength: declared } : {}),
      params: {},
      failure: () => over,
    };
  }
  const raw = hasBody(req) ? await readSmallBody(req, lim) : null;
  // A body without a type of its own carries no parameters for Telegram either.
  if (!raw || enc === 'none') return { query, body: null, params: {}, failure: none };
  const params = badBodyIs400(() => bodyParams(enc, raw));
  return { query, body: raw, ...(contentType ? { contentType } : {}), params, failure: none };
}

/**
 * A recipient token's call of `method` into `chat`: every parameter, from the query string and the
 * body alike, through RecipientParams, sent as a JSON body (a multipart body for an upload).
 */
export async function recipientCall(
  req: FastifyRequest,
  enc: Encoding,
  lim: Limits,
  method: string,
  chat: string,
): Promise<Outgoing> {
  const query = new URLSearchParams();
  const rules = new RecipientParams(method, chat);
  const fromQuery = recipientRule(() => rules.addAll(formPairs(queryOf(req.url), true)));
  if (enc === 'multipart') {
    declaredLength(req, lim);
    const m = confineMultipart(req.parts() as AsyncIterable<Part>, rules, fromQuery);
    return { query, body: Readable.from(m.body), contentType: m.contentType, params: {}, failure: m.failure };
  }
  const raw = hasBody(req) ? await readSmallBody(req, lim) : null;
  const params = recipientRule(() => ({
    chat_id: rules.chatId,
    ...rules.addAll(bodyEntries(enc, raw, true), fromQuery),
  }));
  return {
    query,
    body: Buffer.from(JSON.stringify(params)),
    contentType: 'application/json',
    params,
    failure: none,
  };
}

/** A recipient rule's refusal in the route's terms: 403 for another chat, 400 for an ambiguous call. */
export function recipientRefusal(err: unknown): unknown {
  if (err instanceof Refused) return forbidden(err.message, 'RECIPIENT_REFUSED');
  if (err instanceof Ambiguous || err instanceof BadBody) return badRequest(err.message, 'AMBIGUOUS_CALL');
  return err;
}

function recipientRule<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw recipientRefusal(err);
  }
}

function badBodyIs400<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof BadBody) throw badRequest(err.message, 'BAD_BODY');
    throw err;
  }
}

export function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

/** A POST with a body (GET bodies are not read: nothing is passed on from them). */
export function hasBody(req: FastifyRequest): boolean {
  const len = req.headers['content-length'];
  return (
    req.method === 'POST' &&
    (req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0'))
  );
}

/** The upload's declared length, refused at once when over the cap. */
function declaredLength(req: FastifyRequest, lim: Limits): number | undefined {
  const len = req.headers['content-length'];
  if (len === undefined) return undefined;
  if (Number(len) > lim.maxUploadBytes) throw uploadTooLarge(lim);
  return Number(len);
}

export function uploadTooLarge(lim: Limits): AppError {
  return tooLarge(
    `a multipart call may carry at most ${humanBytes(lim.maxUploadBytes)} (DEVUTIL_TELEGRAM_MAX_UPLOAD_BYTES)`,
    'UPLOAD_TOO_LARGE',
  );
}

/** Aborts when the client goes away before its answer was sent (a long poll it gave up on). */
export function abortOnClose(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}

/** A small body (JSON, form) within its cap and the small-body deadline. */
async function readSmallBody(req: FastifyRequest, lim: Limits): Promise<Buffer> {
  const max = lim.apiMaxBodyBytes;
  const ms = lim.bodyTimeoutMs;
  const reading = readCapped(req.raw, max, { declared: req.headers['content-length'] });
  reading.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    if (ms > 0)
      timer = setTimeout(
        () => reject(new AppError('BODY_TIMEOUT', 408, `request body not received within ${ms / 1000}s`)),
        ms,
      );
  });
  deadline.catch(() => {});
  try {
    return await Promise.race([reading, deadline]);
  } catch (err) {
    if (err instanceof BodyTooLarge)
      throw tooLarge(
        `a Bot API call's body may be at most ${humanBytes(max)} (DEVUTIL_TELEGRAM_API_MAX_BODY_BYTES)`,
      );
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

// A file of the bot through the Bot API base URL (/telegram/file/bot<key>/<file_path>,
// docs/protocols/telegram-bot-api.md §6): the path getFile answered and nothing that could leave the
// bot's file directory upstream, Range and conditional requests passed on, the bytes streamed under
// DEVUTIL_TELEGRAM_MAX_FILE_BYTES while the upstream connection's slot is held.
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { humanBytes } from '../../infra/config/schema.ts';
import { capStream, discard, readCapped } from '../../infra/egress/capped-body.ts';
import { badGateway, badRequest } from '../../infra/http/errors.ts';
import type { FairQueue } from '../../infra/limits/fair-queue.ts';
import { abortOnClose } from './api-request.ts';
import { type BotApiClient, type CallResult, parseAnswer } from './client.ts';
import type { TelegramMetrics } from './index.ts';
import { queueRefusal, resultLabel } from './outcome.ts';

export interface DownloadDeps {
  queue: FairQueue;
  client: BotApiClient;
  metrics: TelegramMetrics;
  maxFileBytes: number;
  /** Telegram's (or our) refusal in the Bot API's shape. */
  answer(r: CallResult, fields: Record<string, unknown>): Promise<unknown>;
}

// A file path as getFile answers it (documents/file_12.pdf, photos/file_3.jpg).
const FILE_PATH = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){0,7}$/;
const HEADERS_IN = ['range', 'if-range', 'if-none-match', 'if-modified-since'];
const HEADERS_OUT = [
  'content-type',
  'content-length',
  'content-range',
  'accept-ranges',
  'etag',
  'last-modified',
];

export async function download(
  d: DownloadDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  who: { key: string; bot: string },
  path: string,
): Promise<FastifyReply> {
  if (!FILE_PATH.test(path) || path.length > 512)
    throw badRequest('not a file path of the Bot API', 'BAD_PATH');
  const headers: Record<string, string> = {};
  for (const h of HEADERS_IN) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const gone = abortOnClose(reply);
  const started = performance.now();
  const fields = { bot: who.bot.slice(0, 8), method: 'file' };
  try {
    await d.queue.run(req.clientKey, async () => {
      const res = await d.client.download(who.key, path, headers, gone);
      if (!('statusCode' in res)) {
        d.metrics.api.inc({ kind: 'file', result: resultLabel(res) });
        return d.answer(res, fields);
      }
      const status = res.statusCode;
      if (status !== 200 && status !== 206 && status !== 304) {
        // An error answer: small JSON from Telegram, read capped and passed on in its shape.
        let text = '';
        try {
          text = (await readCapped(res.body, 64 * 1024)).toString('utf8');
        } catch {
          discard(res.body);
        }
        const r = parseAnswer(status, text, who.key);
        d.metrics.api.inc({ kind: 'file', result: resultLabel(r) });
        return d.answer(
          r.kind === 'ok' ? { kind: 'bad-response', status, reason: 'an error status with ok: true' } : r,
          fields,
        );
      }
      if (Number(res.headers['content-length']) > d.maxFileBytes) {
        discard(res.body);
        throw badGateway(
          `the file is larger than this server relays (DEVUTIL_TELEGRAM_MAX_FILE_BYTES, ${humanBytes(d.maxFileBytes)})`,
          'FILE_TOO_LARGE',
        );
      }
      reply.code(status);
      for (const h of HEADERS_OUT) {
        const v = res.headers[h];
        if (typeof v === 'string') reply.header(h, v);
      }
      reply.header('cache-control', 'private, max-age=3600');
      d.metrics.api.inc({ kind: 'file', result: 'ok' });
      req.log.info({ ...fields, result: 'ok', ms: Math.round(performance.now() - started) }, 'bot api call');
      if (req.method === 'HEAD' || status === 304) {
        discard(res.body);
        return reply.send();
      }
      const out = capStream(res.body as unknown as Readable, d.maxFileBytes);
      // The slot is held until the bytes have gone: the connection upstream is busy until then.
      const done = new Promise<void>((resolve) => {
        out.once('close', resolve);
        reply.raw.once('close', resolve);
      });
      reply.send(out);
      await done;
      return reply;
    });
  } catch (err) {
    throw queueRefusal(err, false);
  }
  return reply;
}

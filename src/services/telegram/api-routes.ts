// The Bot API base URL's routes: /telegram/bot<key>/<method> (and the /test/ environment) for every
// method, and /telegram/file/bot<key>/<path> downloads. Bodies are not parsed by Fastify here: JSON
// and forms are read by the gateway within their cap, multipart uploads stream through (or, for a
// recipient token, through @fastify/multipart's reader so their fields can be checked).
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { MOUNT } from './definition.ts';
import type { TelegramRelay } from './index.ts';

interface CallParams {
  token: string;
  method: string;
}

export async function botApiRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  relay: TelegramRelay,
): Promise<void> {
  const cfg = ctx.config.telegram;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  await app.register(multipart, {
    throwFileSizeLimit: true,
    // A part is a file when it has a filename, as Telegram reads it (busboy's default also takes an
    // application/octet-stream part without one for a file): docs/protocols/telegram-bot-api.md §6.
    isPartAFile: (_name, _type, filename) => filename !== undefined,
    limits: {
      fileSize: cfg.maxUploadBytes,
      files: 10,
      fields: 100,
      fieldSize: cfg.apiMaxBodyBytes,
      parts: 110,
    },
  });
  const apiLimit = ctx.limiter.hook('telegram-api', cfg.apiRateLimit);
  const tags = ['telegram'];
  const params = {
    type: 'object',
    properties: {
      token: { type: 'string', description: 'a bot key <digits>:<secret>, or a recipient token tgr_...' },
      method: { type: 'string', description: 'any Bot API method: sendMessage, sendDocument, getUpdates...' },
    },
  } as const;
  const route = (url: string, test: boolean, summary: string) =>
    app.route<{ Params: CallParams }>({
      method: ['GET', 'POST'],
      url,
      exposeHeadRoute: false,
      onRequest: apiLimit,
      // Uploads stream for as long as they take (requestTimeoutMs); small bodies get the gateway's
      // own body deadline.
      config: { largeBody: true },
      schema: { summary, tags, params },
      handler: relay.handler(
        (r) => (req, reply) => r.gateway.call(req, reply, req.params.token, req.params.method, test),
      ),
    });
  route(
    `${MOUNT}/bot:token/:method`,
    false,
    'Telegram Bot API base URL: any method, JSON, form or multipart, as api.telegram.org/bot<key>/<method>',
  );
  route(`${MOUNT}/bot:token/test/:method`, true, "Telegram Bot API's test environment");
  app.get<{ Params: { token: string; '*': string } }>(
    `${MOUNT}/file/bot:token/*`,
    {
      onRequest: apiLimit,
      schema: {
        summary: 'Download a file of the bot (the file_path getFile answered)',
        tags,
        params: {
          type: 'object',
          properties: {
            token: params.properties.token,
            '*': { type: 'string', description: 'the file_path getFile answered: documents/file_12.pdf' },
          },
        },
      },
    },
    relay.handler((r) => (req, reply) => r.gateway.file(req, reply, req.params.token, req.params['*'])),
  );
}

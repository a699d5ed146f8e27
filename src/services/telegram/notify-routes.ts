// ntfy and Gotify publishes onto recipient tokens (docs/telegram.md, ntfy and Gotify): the Bot API
// base URL is also an ntfy server whose topics are recipient tokens (PUT/POST <base>/<token>, GET
// <base>/<token>/publish, JSON to <base>/) and a Gotify server whose application tokens are
// recipient tokens (POST <base>/message). Each publish is one message in the token's chat, under
// its rules and the budgets of /r/<token>; answers and failures are in the protocol's own shape.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { MOUNT } from './definition.ts';
import { GOTIFY_ENVELOPE } from './gotify.ts';
import type { TelegramRelay } from './index.ts';
import { NTFY_ENVELOPE } from './ntfy.ts';

// A topic that starts like a recipient token; any other one-segment path stays the Bot API's.
const TOPIC = ':topic(^tgr_.*$)';

export async function notifyRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  relay: TelegramRelay,
): Promise<void> {
  const cfg = ctx.config.telegram;
  const depth = ctx.config.server.jsonMaxDepth;
  // The same per-client budget as /r/<token>; the token's own budgets are paid in the gateway.
  const messages = ctx.limiter.hook('telegram-ip', cfg.rateLimit);
  // Bodies as bytes, whatever their type: ntfy reads any body as the message.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  const tags = ['telegram'];
  const ntfy = { onRequest: messages, bodyLimit: cfg.maxBodyBytes, config: { envelope: NTFY_ENVELOPE } };

  const topicPublish = relay.handler(
    (r) => (req: FastifyRequest<{ Params: { topic: string } }>, reply: FastifyReply) =>
      r.topicPublish(r.gateway, req, reply),
  );

  app.route<{ Params: { topic: string } }>({
    method: ['PUT', 'POST'],
    url: `${MOUNT}/${TOPIC}`,
    ...ntfy,
    schema: { summary: 'ntfy publish: the topic is a recipient token; the body is the message', tags },
    handler: topicPublish,
  });
  app.route<{ Params: { topic: string; action: string } }>({
    method: ['GET', 'PUT', 'POST'],
    url: `${MOUNT}/${TOPIC}/:action(^(publish|send|trigger)$)`,
    exposeHeadRoute: false,
    ...ntfy,
    schema: { summary: 'ntfy publish by GET: /<token>/publish?message=...&title=...', tags },
    handler: topicPublish,
  });
  for (const url of [MOUNT, `${MOUNT}/`])
    app.route({
      method: ['PUT', 'POST'],
      url,
      ...ntfy,
      schema: {
        summary: 'ntfy JSON publish: {"topic":"<recipient token>","message":"...","title":"..."}',
        tags,
      },
      handler: relay.handler((r) => (req, reply) => r.jsonPublish(r.gateway, depth, req, reply)),
    });

  app.post(
    `${MOUNT}/message`,
    {
      onRequest: messages,
      bodyLimit: cfg.maxBodyBytes,
      config: { envelope: GOTIFY_ENVELOPE },
      schema: { summary: 'Gotify message: the application token is a recipient token', tags },
    },
    relay.handler((r) => (req, reply) => r.gotifyPublish(r.gateway, depth, req, reply)),
  );
}

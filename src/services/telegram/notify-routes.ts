// ntfy and Gotify publishes onto recipient tokens (docs/telegram.md, ntfy and Gotify): the Bot API
// base URL is also an ntfy server whose topics are recipient tokens (PUT/POST <base>/<token>, GET
// <base>/<token>/publish, JSON to <base>/) and a Gotify server whose application tokens are
// recipient tokens (POST <base>/message). Each publish is one message in the token's chat, under
// its rules and the budgets of /r/<token>; answers and failures are in the protocol's own shape.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../infra/http/errors.ts';
import type { BotApiGateway } from './api-gateway.ts';
import { MOUNT } from './definition.ts';
import { GOTIFY_ENVELOPE, gotifyAnswer, gotifyMessage, gotifyNotice, gotifyToken } from './gotify.ts';
import { type Notice, noticeMessage } from './notice.ts';
import { NTFY_ENVELOPE, ntfyAnswer, ntfyJson, ntfyPublish } from './ntfy.ts';
import { isRecipientToken } from './recipients.ts';

// A topic that starts like a recipient token; any other one-segment path stays the Bot API's.
const TOPIC = ':topic(^tgr_.*$)';

export async function notifyRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  gw: BotApiGateway,
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

  const publish = (req: FastifyRequest, reply: FastifyReply, topic: string, n: Notice) =>
    gw.sendAs(req, reply, topic, noticeMessage(n), {
      via: 'ntfy',
      shape: (sent) => ntfyAnswer(topic, n, sent),
    });

  const topicPublish = (req: FastifyRequest<{ Params: { topic: string } }>, reply: FastifyReply) =>
    publish(
      req,
      reply,
      req.params.topic,
      ntfyPublish({
        headers: req.headers,
        query: req.query as Record<string, unknown>,
        body: Buffer.isBuffer(req.body) ? req.body : undefined,
      }),
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
      handler: (req, reply) => {
        const { topic, notice } = ntfyJson(Buffer.isBuffer(req.body) ? req.body : undefined, depth);
        return publish(req, reply, topic, notice);
      },
    });

  app.post(
    `${MOUNT}/message`,
    {
      onRequest: messages,
      bodyLimit: cfg.maxBodyBytes,
      config: { envelope: GOTIFY_ENVELOPE },
      schema: { summary: 'Gotify message: the application token is a recipient token', tags },
    },
    async (req, reply) => {
      const r = {
        headers: req.headers,
        query: req.query as Record<string, unknown>,
        body: Buffer.isBuffer(req.body) ? req.body : undefined,
      };
      const token = gotifyToken(r);
      // A credential, not a path: Gotify's 401 for one that is not a recipient token.
      if (!isRecipientToken(token))
        throw new AppError(
          'NOT_A_TOKEN',
          401,
          "not a recipient token (tgr_ and 43 letters, digits, '_' or '-')",
        );
      const m = await gotifyMessage(r, depth);
      let title = '';
      return gw.sendAs(
        req,
        reply,
        token,
        (rcpt) => {
          const n = gotifyNotice(m, rcpt.name);
          title = n.title;
          return noticeMessage(n);
        },
        {
          via: 'gotify',
          // A stable number per token for Gotify's appid: the first 8 hex digits of its public id.
          shape: (sent, rcpt) => gotifyAnswer(m, title, sent, Number.parseInt(rcpt.id.slice(0, 8), 16)),
        },
      );
    },
  );
}

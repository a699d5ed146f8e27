// The ntfy and Gotify publishes' handlers (the routes are in notify-routes.ts): each publish is one
// message in the recipient token's chat, sent through the gateway and answered in the protocol's
// own shape. Loaded with the rest of the relay on the first request (relay.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../infra/http/errors.ts';
import type { BotApiGateway } from './api-gateway.ts';
import { gotifyAnswer, gotifyMessage, gotifyNotice, gotifyToken } from './gotify.ts';
import { type Notice, noticeMessage } from './notice.ts';
import { ntfyAnswer, ntfyJson, ntfyPublish } from './ntfy.ts';
import { isRecipientToken } from './recipients.ts';

const publish = (gw: BotApiGateway, req: FastifyRequest, reply: FastifyReply, topic: string, n: Notice) =>
  gw.sendAs(req, reply, topic, noticeMessage(n), {
    via: 'ntfy',
    shape: (sent) => ntfyAnswer(topic, n, sent),
  });

/** ntfy's topic publish (PUT/POST <base>/<token>, GET <base>/<token>/publish). */
export const topicPublish = (
  gw: BotApiGateway,
  req: FastifyRequest<{ Params: { topic: string } }>,
  reply: FastifyReply,
) =>
  publish(
    gw,
    req,
    reply,
    req.params.topic,
    ntfyPublish({
      headers: req.headers,
      query: req.query as Record<string, unknown>,
      body: Buffer.isBuffer(req.body) ? req.body : undefined,
    }),
  );

/** ntfy's JSON publish to the server's root, the topic inside. */
export function jsonPublish(gw: BotApiGateway, depth: number, req: FastifyRequest, reply: FastifyReply) {
  const { topic, notice } = ntfyJson(Buffer.isBuffer(req.body) ? req.body : undefined, depth);
  return publish(gw, req, reply, topic, notice);
}

/** Gotify's POST /message: the application token is a recipient token. */
export async function gotifyPublish(
  gw: BotApiGateway,
  depth: number,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const r = {
    headers: req.headers,
    query: req.query as Record<string, unknown>,
    body: Buffer.isBuffer(req.body) ? req.body : undefined,
  };
  const token = gotifyToken(r);
  // A credential, not a path: Gotify's 401 for one that is not a recipient token.
  if (!isRecipientToken(token))
    throw new AppError('NOT_A_TOKEN', 401, "not a recipient token (tgr_ and 43 letters, digits, '_' or '-')");
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
}

// Recipient tokens over HTTP (docs/telegram.md, Recipient tokens): the bot's owner registers, lists
// and revokes them with the bot key (Authorization: Bearer <key>); a token's holder sends with it
// to /telegram/r/<token> (a text or sendMessage parameters) or lets Alertmanager post its webhook
// to /telegram/r/<token>/alertmanager. Answers are in the Bot API's shape, as everything under
// /telegram/. The route table: the handlers are in recipient-handlers.ts.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { badRequest } from '../../infra/http/errors.ts';
import { JsonError, parseJson } from '../../infra/http/strict-json.ts';
import { MOUNT } from './definition.ts';
import type { TelegramRelay } from './index.ts';
import { RECIPIENT_METHODS } from './methods.ts';
import { laterNotLost } from './outcome.ts';

/**
 * JSON bodies in this scope with a duplicate key refused at any depth: what a token may send is
 * checked on one reading, and Telegram's (the first key) must not be another.
 */
function strictJson(app: FastifyInstance, maxDepth: number): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJson(body as string, { duplicates: 'refuse', maxDepth }));
    } catch (err) {
      done(err instanceof JsonError ? badRequest(err.message, 'BAD_JSON') : (err as Error), undefined);
    }
  });
}

export async function recipientRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  relay: TelegramRelay,
): Promise<void> {
  const cfg = ctx.config.telegram;
  const tags = ['telegram'];
  const manage = ctx.limiter.hook('telegram-recipients', cfg.recipientRateLimit);
  const messages = ctx.limiter.hook('telegram-ip', cfg.rateLimit);
  strictJson(app, ctx.config.server.jsonMaxDepth);

  app.post(
    `${MOUNT}/recipients`,
    {
      onRequest: manage,
      bodyLimit: 16 * 1024,
      schema: {
        summary: 'Register a recipient token: sends to one chat of your bot, without the bot key',
        description: 'Authorization: Bearer <bot key>. The token is in the answer only: keep it.',
        tags,
        body: {
          type: 'object',
          properties: {
            chat_id: { type: ['integer', 'string'], description: 'numeric chat id or @channelname' },
            name: { type: 'string', description: 'a label for your own listing' },
            methods: {
              type: 'array',
              items: { type: 'string', enum: [...RECIPIENT_METHODS] },
              description: 'Bot API methods the token may call (default: sendMessage)',
            },
          },
        },
      },
      // Checked by hand below (no coercion: a chat id must not become something else).
      validatorCompiler: () => (data: unknown) => ({ value: data }),
    },
    relay.handler((r) => (req, reply) => r.registerRecipient(r.recipient, req, reply)),
  );

  app.get(
    `${MOUNT}/recipients`,
    { onRequest: manage, schema: { summary: "List your bot's recipient tokens (never the tokens)", tags } },
    relay.handler((r) => (req, reply) => r.listRecipients(r.recipient, req, reply)),
  );

  app.delete<{ Params: { id: string } }>(
    `${MOUNT}/recipients/:id`,
    { onRequest: manage, schema: { summary: 'Revoke a recipient token at once, on every instance', tags } },
    relay.handler((r) => (req) => r.revokeRecipient(r.recipient, req)),
  );

  app.post<{ Params: { token: string } }>(
    `${MOUNT}/r/:token`,
    {
      onRequest: messages,
      bodyLimit: cfg.maxBodyBytes,
      schema: {
        summary:
          "Send a message with a recipient token (to its one chat): a text, or sendMessage's parameters",
        tags,
      },
    },
    relay.handler((r) => (req, reply) => r.sendWithToken(r.recipient, req, reply)),
  );

  app.post<{ Params: { token: string } }>(
    `${MOUNT}/r/:token/alertmanager`,
    {
      // Alertmanager drops a notification answered 4xx and retries a 5xx: a budget's 429 is a 503.
      onRequest: async (req, reply) => {
        try {
          await messages.call(app, req, reply);
        } catch (err) {
          throw laterNotLost(err);
        }
      },
      bodyLimit: cfg.apiMaxBodyBytes,
      schema: {
        summary: "Alertmanager's (or Grafana's) webhook as one readable message in the token's chat",
        tags,
      },
    },
    relay.handler((r) => (req, reply) => r.alertWithToken(r.recipient, req, reply)),
  );
}

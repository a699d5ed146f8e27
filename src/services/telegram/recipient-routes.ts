// Recipient tokens over HTTP (docs/telegram.md, Recipient tokens): the bot's owner registers, lists
// and revokes them with the bot key (Authorization: Bearer <key>); a token's holder sends with it
// to /telegram/r/<token> (a text or sendMessage parameters) or lets Alertmanager post its webhook
// to /telegram/r/<token>/alertmanager. Answers are in the Bot API's shape, as everything under
// /telegram/.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../../infra/http/errors.ts';
import { JsonError, parseJson } from '../../infra/http/strict-json.ts';
import { BadAlert, formatAlerts } from './alertmanager.ts';
import { chatRef, type Params } from './api-body.ts';
import type { BotApiGateway } from './api-gateway.ts';
import type { BotApiClient } from './client.ts';
import { MOUNT } from './definition.ts';
import { botAllowed, isBotKey, NOT_LISTED } from './key.ts';
import { MAX_TEXT } from './message.ts';
import { RECIPIENT_METHODS, recipientMethod } from './methods.ts';
import { laterNotLost, toAppError } from './outcome.ts';
import { type Recipient, RecipientLimit, type RecipientStore } from './recipients.ts';

export interface RecipientDeps {
  gateway: BotApiGateway;
  client: BotApiClient;
  recipients: RecipientStore;
}

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

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export async function recipientRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  { gateway, client, recipients }: RecipientDeps,
): Promise<void> {
  const cfg = ctx.config.telegram;
  const base = ctx.urls.telegram;
  const tags = ['telegram'];
  const manage = ctx.limiter.hook('telegram-recipients', cfg.recipientRateLimit);
  const messages = ctx.limiter.hook('telegram-ip', cfg.rateLimit);
  strictJson(app, ctx.config.server.jsonMaxDepth);

  /** The bot key of the owner's call: Authorization: Bearer <key>. */
  function ownerKey(req: FastifyRequest): string {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m || !isBotKey(m[1]!))
      throw unauthorized('send the bot key as Authorization: Bearer <key>', 'NO_BOT_KEY');
    if (!botAllowed(m[1]!, cfg.allowedBots)) throw forbidden(NOT_LISTED, 'BOT_NOT_ALLOWED');
    return m[1]!;
  }

  const view = (r: Recipient) => ({
    id: r.id,
    bot_id: Number(r.bot),
    chat_id: Number(r.chat),
    chat_title: r.chatTitle,
    name: r.name,
    methods: r.methods,
    created: r.created,
  });

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
    async (req, reply) => {
      const key = ownerKey(req);
      const b = isRecord(req.body) ? req.body : {};
      const ref = chatRef(b['chat_id'] ?? b['chatId']);
      if (!ref) throw badRequest('chat_id must be a numeric chat id or @channelname', 'BAD_CHAT');
      const name = b['name'] === undefined ? '' : b['name'];
      if (typeof name !== 'string' || name.length > 100)
        throw badRequest('name must be a text of at most 100 characters', 'BAD_NAME');
      const asked = b['methods'] === undefined ? ['sendMessage'] : b['methods'];
      if (!Array.isArray(asked) || asked.length === 0 || asked.length > RECIPIENT_METHODS.length)
        throw badRequest(`methods must be a list of ${RECIPIENT_METHODS.join(', ')}`, 'BAD_METHODS');
      const methods = [...new Set(asked.map((m) => (typeof m === 'string' ? recipientMethod(m) : null)))];
      if (methods.some((m) => m === null))
        throw badRequest(`methods may only be ${RECIPIENT_METHODS.join(', ')}`, 'BAD_METHODS');
      // Telegram checks the key and that the bot sees the chat, and gives its numeric id (a
      // @channel's id stays when the channel is renamed).
      const r = await client.call(key, 'getChat', { chat_id: ref });
      if (r.kind !== 'ok') {
        req.log.info(
          { result: r.kind, ...(r.kind === 'api-error' ? { description: r.description } : {}) },
          'recipient registration refused by telegram',
        );
        throw toAppError(r, cfg.timeoutMs, client.upstream);
      }
      const chat = isRecord(r.result) ? r.result : {};
      const id = chat['id'];
      if (typeof id !== 'number' || !Number.isSafeInteger(id))
        throw toAppError(
          { kind: 'bad-response', status: 200, reason: 'getChat answered no chat id' },
          cfg.timeoutMs,
          client.upstream,
        );
      const title = [chat['title'], chat['username'] ? `@${chat['username']}` : '', chat['first_name']].find(
        (v) => typeof v === 'string' && v !== '',
      ) as string | undefined;
      let made: Awaited<ReturnType<RecipientStore['create']>>;
      try {
        made = await recipients.create(
          key,
          { chat: String(id), chatTitle: (title ?? '').slice(0, 200), name, methods: methods as string[] },
          { perBot: cfg.maxRecipientsPerBot, total: cfg.maxRecipients },
        );
      } catch (err) {
        if (err instanceof RecipientLimit) throw conflict(err.message, 'RECIPIENT_LIMIT');
        throw err;
      }
      req.log.info({ recipient: made.recipient.id, chat: id }, 'recipient token registered');
      const t = made.token;
      reply.code(201).header('cache-control', 'no-store');
      return {
        ok: true,
        result: {
          token: t,
          ...view(made.recipient),
          urls: {
            message: `${base}/r/${t}`,
            alertmanager: `${base}/r/${t}/alertmanager`,
            bot_api: `${base}/bot${t}`,
          },
        },
      };
    },
  );

  app.get(
    `${MOUNT}/recipients`,
    { onRequest: manage, schema: { summary: "List your bot's recipient tokens (never the tokens)", tags } },
    async (req, reply) => {
      const list = await recipients.list(ownerKey(req));
      reply.header('cache-control', 'no-store');
      return { ok: true, result: list.map(view) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    `${MOUNT}/recipients/:id`,
    { onRequest: manage, schema: { summary: 'Revoke a recipient token at once, on every instance', tags } },
    async (req) => {
      const key = ownerKey(req);
      if (!(await recipients.revoke(key, req.params.id)))
        throw notFound('this bot has no recipient with that id', 'NO_RECIPIENT');
      req.log.info({ recipient: req.params.id }, 'recipient token revoked');
      return { ok: true, result: true };
    },
  );

  const send = (req: FastifyRequest<{ Params: { token: string } }>, reply: FastifyReply, params: Params) =>
    gateway.sendAs(req, reply, req.params.token, params);

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
    async (req, reply) => {
      const params: Params =
        typeof req.body === 'string' ? { text: req.body } : isRecord(req.body) ? { ...req.body } : {};
      const text = params['text'];
      if (typeof text !== 'string' || text.trim() === '')
        throw badRequest('send a text: a text/plain body, or JSON with a text field', 'NO_TEXT');
      if (text.length > MAX_TEXT)
        throw badRequest(`text is over ${MAX_TEXT} characters (${text.length})`, 'TEXT_TOO_LONG');
      return send(req, reply, params);
    },
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
    async (req, reply) => {
      let text: string;
      try {
        text = formatAlerts(req.body);
      } catch (err) {
        if (err instanceof BadAlert) throw badRequest(err.message, 'BAD_WEBHOOK');
        throw err;
      }
      return gateway.sendAs(
        req,
        reply,
        req.params.token,
        { text, parse_mode: 'HTML', link_preview_options: { is_disabled: true } },
        true,
      );
    },
  );
}

// The recipient-token handlers (docs/telegram.md, Recipient tokens): the owner registers, lists
// and revokes tokens with the bot key; a token's holder sends a text or an Alertmanager webhook.
// Each takes the RecipientHandlerDeps recipientRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../../infra/http/errors.ts';
import { BadAlert, formatAlerts } from './alertmanager.ts';
import { chatRef, type Params } from './api-body.ts';
import type { BotApiGateway } from './api-gateway.ts';
import type { BotApiClient } from './client.ts';
import { botAllowed, isBotKey, NOT_LISTED } from './key.ts';
import { MAX_TEXT } from './message.ts';
import { RECIPIENT_METHODS, recipientMethod } from './methods.ts';
import { toAppError } from './outcome.ts';
import { type Recipient, RecipientLimit, type RecipientStore } from './recipients.ts';

export interface RecipientHandlerDeps {
  cfg: Config['telegram'];
  /** The message relay's public base URL (a registration answers the token's URLs). */
  base: string;
  gateway: BotApiGateway;
  client: BotApiClient;
  recipients: RecipientStore;
}

export type TokenReq = FastifyRequest<{ Params: { token: string } }>;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The bot key of the owner's call: Authorization: Bearer <key>. */
function ownerKey(d: RecipientHandlerDeps, req: FastifyRequest): string {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!m || !isBotKey(m[1]!))
    throw unauthorized('send the bot key as Authorization: Bearer <key>', 'NO_BOT_KEY');
  if (!botAllowed(m[1]!, d.cfg.allowedBots)) throw forbidden(NOT_LISTED, 'BOT_NOT_ALLOWED');
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

/** POST /recipients: a new token for one chat the bot sees (Telegram's getChat checks both). */
export async function registerRecipient(d: RecipientHandlerDeps, req: FastifyRequest, reply: FastifyReply) {
  const { cfg, client, recipients, base } = d;
  const key = ownerKey(d, req);
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
        ntfy: `${base}/${t}`,
        gotify: `${base}/message?token=${t}`,
      },
    },
  };
}

/** GET /recipients: the bot's recipients, never their tokens. */
export async function listRecipients(d: RecipientHandlerDeps, req: FastifyRequest, reply: FastifyReply) {
  const list = await d.recipients.list(ownerKey(d, req));
  reply.header('cache-control', 'no-store');
  return { ok: true, result: list.map(view) };
}

/** DELETE /recipients/<id>: revoked at once, on every instance. */
export async function revokeRecipient(
  d: RecipientHandlerDeps,
  req: FastifyRequest<{ Params: { id: string } }>,
) {
  const key = ownerKey(d, req);
  if (!(await d.recipients.revoke(key, req.params.id)))
    throw notFound('this bot has no recipient with that id', 'NO_RECIPIENT');
  req.log.info({ recipient: req.params.id }, 'recipient token revoked');
  return { ok: true, result: true };
}

/** POST /r/<token>: a text (or sendMessage's parameters) to the token's one chat. */
export async function sendWithToken(d: RecipientHandlerDeps, req: TokenReq, reply: FastifyReply) {
  const params: Params =
    typeof req.body === 'string' ? { text: req.body } : isRecord(req.body) ? { ...req.body } : {};
  const text = params['text'];
  if (typeof text !== 'string' || text.trim() === '')
    throw badRequest('send a text: a text/plain body, or JSON with a text field', 'NO_TEXT');
  if (text.length > MAX_TEXT)
    throw badRequest(`text is over ${MAX_TEXT} characters (${text.length})`, 'TEXT_TOO_LONG');
  return d.gateway.sendAs(req, reply, req.params.token, params);
}

/** POST /r/<token>/alertmanager: Alertmanager's (or Grafana's) webhook as one readable message. */
export async function alertWithToken(d: RecipientHandlerDeps, req: TokenReq, reply: FastifyReply) {
  let text: string;
  try {
    text = formatAlerts(req.body);
  } catch (err) {
    if (err instanceof BadAlert) throw badRequest(err.message, 'BAD_WEBHOOK');
    throw err;
  }
  return d.gateway.sendAs(
    req,
    reply,
    req.params.token,
    { text, parse_mode: 'HTML', link_preview_options: { is_disabled: true } },
    { retryable: true },
  );
}

// The relay's request body -> one sendMessage call (docs/protocols/telegram-bot-api.md §2). Framework-free:
// every refusal is a BadInput naming the field, and unknown msgText fields are forwarded for newer Bot API
// versions.
import { escapeFor, PARSE_MODES, type ParseMode } from './escape.ts';
import { isBotKey } from './key.ts';

/** Telegram's limit, in UTF-16 code units after entity parsing (docs/protocols/telegram-bot-api.md §2). */
export const MAX_TEXT = 4096;

export class BadInput extends Error {
  override name = 'BadInput';
}

export interface SendPlan {
  key: string;
  chatId: string | number;
  params: Record<string, unknown>;
  /** With plainFallback: the same message as plain text, sent once if Telegram rejects the markup. */
  plain?: Record<string, unknown>;
}

export interface PlanOptions {
  defaultText: string;
}

// Numeric ids (groups negative, channels -100...) or @channelusername.
const NUMERIC_CHAT = /^-?\d{1,20}$/;
const USERNAME_CHAT = /^@[A-Za-z][A-Za-z0-9_]{2,63}$/;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function chatIdOf(v: unknown): string | number {
  if (v === undefined || v === null || v === '') throw new BadInput('chatId is required');
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v === 0) throw new BadInput('chatId must be a non-zero integer id');
    return v;
  }
  if (typeof v !== 'string') throw new BadInput('chatId must be a string or a number');
  const s = v.trim();
  if (!NUMERIC_CHAT.test(s) && !USERNAME_CHAT.test(s))
    throw new BadInput('chatId must be a numeric chat id or @channelname');
  return s;
}

function modeOf(v: unknown): ParseMode {
  if (v === undefined || v === null) return 'MarkdownV2';
  if (typeof v !== 'string' || !(PARSE_MODES as readonly string[]).includes(v))
    throw new BadInput(`parseMode must be one of ${PARSE_MODES.join(', ')}`);
  return v as ParseMode;
}

function checkText(text: string, field: string): void {
  if (text.trim() === '') throw new BadInput(`${field} is empty`);
  if (text.length > MAX_TEXT)
    throw new BadInput(
      `${field} is over ${MAX_TEXT} characters (${text.length}); split it into several messages`,
    );
}

// Bot API 7.0 deprecated these; Telegram still accepts them, but the new objects are what it documents.
function mapDeprecated(p: Record<string, unknown>): void {
  if (p['disable_web_page_preview'] !== undefined && p['link_preview_options'] === undefined) {
    p['link_preview_options'] = { is_disabled: p['disable_web_page_preview'] === true };
    delete p['disable_web_page_preview'];
  }
  if (p['reply_to_message_id'] !== undefined && p['reply_parameters'] === undefined) {
    p['reply_parameters'] = {
      message_id: p['reply_to_message_id'],
      ...(p['allow_sending_without_reply'] !== undefined
        ? { allow_sending_without_reply: p['allow_sending_without_reply'] }
        : {}),
    };
    delete p['reply_to_message_id'];
    delete p['allow_sending_without_reply'];
  }
}

/** Validates the relay body and builds the sendMessage parameters. Throws BadInput. */
export function planMessage(body: unknown, opts: PlanOptions): SendPlan {
  if (!isRecord(body)) throw new BadInput('body must be a JSON object');
  const { apiKey, chatId: rawChat, msgText, parseMode, escape: wantEscape, plainFallback } = body;
  if (apiKey === undefined || apiKey === null || apiKey === '') throw new BadInput('apiKey is required');
  if (typeof apiKey !== 'string') throw new BadInput('apiKey must be a string');
  if (!isBotKey(apiKey)) throw new BadInput('apiKey is not a bot key (expected <digits>:<secret>)');
  const chatId = chatIdOf(rawChat);
  const mode = modeOf(parseMode);
  if (wantEscape !== undefined && typeof wantEscape !== 'boolean')
    throw new BadInput('escape must be true or false');
  if (plainFallback !== undefined && typeof plainFallback !== 'boolean')
    throw new BadInput('plainFallback must be true or false');

  let params: Record<string, unknown>;
  let original = opts.defaultText;
  if (msgText === undefined || msgText === null) {
    // The connectivity check: always escaped, so the default text cannot break the markup.
    params = { text: escapeFor(mode, opts.defaultText) };
    if (mode !== 'none') params['parse_mode'] = mode;
  } else if (typeof msgText === 'string') {
    checkText(msgText, 'msgText');
    original = msgText;
    params = { text: wantEscape ? escapeFor(mode, msgText) : msgText };
    if (mode !== 'none') params['parse_mode'] = mode;
  } else if (isRecord(msgText)) {
    params = { ...msgText };
    const text = params['text'];
    if (text === undefined || text === null) throw new BadInput('msgText.text is required');
    if (typeof text !== 'string') throw new BadInput('msgText.text must be a string');
    checkText(text, 'msgText.text');
    original = text;
    const given = params['parse_mode'];
    if (given !== undefined && typeof given !== 'string')
      throw new BadInput('msgText.parse_mode must be a string');
    // entities replace parse_mode (docs/protocols/telegram-bot-api.md §2), so no default is added next to
    // them.
    if (given === undefined && params['entities'] === undefined && mode !== 'none')
      params['parse_mode'] = mode;
    const effective = (params['parse_mode'] ?? 'none') as string;
    if (wantEscape && (PARSE_MODES as readonly string[]).includes(effective))
      params['text'] = escapeFor(effective as ParseMode, text);
    mapDeprecated(params);
  } else {
    throw new BadInput('msgText must be a string or an object with a text field');
  }
  // The top-level chatId always wins over a chat_id inside msgText.
  delete params['chat_id'];
  const plan: SendPlan = { key: apiKey, chatId, params: { chat_id: chatId, ...params } };
  if (plainFallback === true && plan.params['parse_mode'] !== undefined) {
    // A caller may ask for one resend without parse_mode when the markup does not parse
    // (docs/protocols/telegram-bot-api.md §3).
    const { parse_mode: _dropped, ...rest } = plan.params;
    plan.plain = { ...rest, text: original };
  }
  return plan;
}

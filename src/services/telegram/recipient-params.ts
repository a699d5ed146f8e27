// The parameters a recipient token's call may carry (docs/telegram.md, Recipient tokens), one at a
// time as they arrive from the query string, a JSON, form or multipart body: each method's own
// parameters and nothing else, its one chat and no other. Whatever two readers could read two ways
// is refused (docs/protocols/telegram-bot-api.md §1): a name given twice (Telegram reads the first
// of them, most libraries the last), a name that is not a plain token (Telegram's multipart reader
// splits on ';' and decodes %XX inside names), JSON with a duplicate key at any depth, JSON text that
// does not parse. What passes is written anew by devutil. Framework-free.
import { DuplicateKey, JsonError, parseJson } from '../../infra/http/strict-json.ts';
import { chatRef, type Params } from './api-body.ts';

/** A parameter that reaches outside the token's chat (another chat, a business connection): 403. */
export class Refused extends Error {
  override name = 'Refused';
}

/** A call two readers could read two ways, or that does not parse: 400. */
export class Ambiguous extends Error {
  override name = 'Ambiguous';
}

// Bot API 9.x parameter lists of the methods a token may be given (docs/protocols/telegram-bot-api.md
// §2). Left out on purpose: business_connection_id (refused), allow_paid_broadcast and
// suggested_post_parameters (they spend the bot's Stars).
const SENDING = [
  'chat_id',
  'message_thread_id',
  'direct_messages_topic_id',
  'disable_notification',
  'protect_content',
  'message_effect_id',
  'reply_parameters',
  'reply_markup',
  'reply_to_message_id',
  'allow_sending_without_reply',
];
const CAPTION = ['caption', 'parse_mode', 'caption_entities', 'show_caption_above_media'];
const MEDIA = ['duration', 'width', 'height', 'thumbnail', 'has_spoiler'];

const PARAMS: Record<string, ReadonlySet<string>> = {
  sendMessage: new Set([
    ...SENDING,
    'text',
    'parse_mode',
    'entities',
    'link_preview_options',
    'disable_web_page_preview',
  ]),
  sendPhoto: new Set([...SENDING, ...CAPTION, 'photo', 'has_spoiler']),
  sendDocument: new Set([...SENDING, ...CAPTION, 'document', 'thumbnail', 'disable_content_type_detection']),
  sendAudio: new Set([...SENDING, ...CAPTION, 'audio', 'duration', 'performer', 'title', 'thumbnail']),
  sendVideo: new Set([
    ...SENDING,
    ...CAPTION,
    ...MEDIA,
    'video',
    'cover',
    'start_timestamp',
    'supports_streaming',
  ]),
  sendAnimation: new Set([...SENDING, ...CAPTION, ...MEDIA, 'animation']),
  sendVoice: new Set([...SENDING, ...CAPTION, 'voice', 'duration']),
  sendChatAction: new Set(['chat_id', 'message_thread_id', 'action']),
};

/** Parameters whose value is JSON: an object or array in a JSON body, JSON text elsewhere. */
const JSON_VALUED = new Set([
  'reply_parameters',
  'reply_markup',
  'entities',
  'caption_entities',
  'link_preview_options',
]);

/** Parameters an upload may send as a file part (or as a file_id, URL or attach://<part>). */
const FILE_VALUED = new Set([
  'photo',
  'document',
  'audio',
  'video',
  'animation',
  'voice',
  'thumbnail',
  'cover',
]);

/**
 * A parameter or part name: a token no reader splits or decodes (RFC 7578 §4.2 allows more, but
 * Telegram's reader bends anything with ';', '"', '%' or '\' in it).
 */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const JSON_DEPTH = 32;

/**
 * The parameters of one recipient call, collected from every place they come from. `add` checks
 * one and answers its value as devutil sends it (undefined: not passed on); `file` checks a file
 * part's name. Throws Refused or Ambiguous.
 */
export class RecipientParams {
  private readonly seen = new Set<string>();
  private readonly own: ReadonlySet<string>;
  readonly method: string;
  readonly chat: string;

  constructor(method: string, chat: string) {
    const own = PARAMS[method];
    if (!own) throw new Error(`no parameter list for ${method}`);
    this.method = method;
    this.chat = chat;
    this.own = own;
  }

  /** chat_id as devutil sends it: the token's chat, a number when it is one. */
  get chatId(): number | string {
    return /^-?\d+$/.test(this.chat) && Number.isSafeInteger(Number(this.chat))
      ? Number(this.chat)
      : this.chat;
  }

  private claim(name: string): void {
    if (!NAME.test(name))
      throw new Ambiguous(
        `a parameter name is 1-64 letters, digits, '_' or '-' (got ${JSON.stringify(name.slice(0, 80))})`,
      );
    if (this.seen.has(name))
      throw new Ambiguous(
        `${name} is given twice (in the query and the body, or twice in one); give each parameter once`,
      );
    this.seen.add(name);
    if (name === 'business_connection_id')
      throw new Refused('recipient tokens cannot send through a business connection');
  }

  add(name: string, value: unknown): unknown {
    this.claim(name);
    if (!this.own.has(name)) return undefined;
    if (name === 'chat_id') {
      if (chatRef(value) !== this.chat)
        throw new Refused(
          `this recipient token sends only to chat ${this.chat}; leave chat_id out or give that id`,
        );
      return this.chatId;
    }
    if (!JSON_VALUED.has(name)) return value;
    const v = typeof value === 'string' ? jsonText(name, value) : value;
    return name === 'reply_parameters' ? this.reply(v) : v;
  }

  /** A file part: a plain name, given once, and not one of the method's text parameters. */
  file(name: string): void {
    this.claim(name);
    if (this.own.has(name) && !FILE_VALUED.has(name))
      throw new Ambiguous(`${name} is a text parameter of ${this.method}, not a file`);
  }

  /** reply_parameters may quote only the token's chat (chat_id there copies in another chat's message). */
  private reply(v: unknown): unknown {
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Ambiguous('reply_parameters must be a JSON object');
    const r = v as Record<string, unknown>;
    if (r['chat_id'] === undefined) return r;
    if (chatRef(r['chat_id']) !== this.chat)
      throw new Refused('a reply may quote only the chat of this recipient token');
    return { ...r, chat_id: this.chatId };
  }

  /** Every parameter of `params` (a JSON body, a form, the query) as passed on, chat_id left out. */
  addAll(params: Iterable<[string, unknown]>, into: Params = {}): Params {
    for (const [k, v] of params) {
      const out = this.add(k, v);
      if (out !== undefined && k !== 'chat_id') into[k] = out;
    }
    return into;
  }
}

function jsonText(name: string, text: string): unknown {
  try {
    return parseJson(text, { duplicates: 'refuse', maxDepth: JSON_DEPTH });
  } catch (err) {
    if (err instanceof DuplicateKey) throw new Ambiguous(`${name}: ${err.message}`);
    if (err instanceof JsonError) throw new Ambiguous(`${name} must be JSON (${err.message})`);
    throw err;
  }
}

/** A value as text in a form or multipart field: JSON for anything that is not already text. */
export function asText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** `entries` of a call of `method` into `chat` with the rules applied, chat_id first. */
export function confine(method: string, chat: string, entries: Iterable<[string, unknown]>): Params {
  const rules = new RecipientParams(method, chat);
  return { chat_id: rules.chatId, ...rules.addAll(entries) };
}

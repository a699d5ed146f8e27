// Bot API methods by what the relay does with them: messages pay Telegram's pacing, getUpdates is a
// long poll on connections of its own, and recipient tokens may call only a few sending methods.
// Method names are case-insensitive (docs/protocols/telegram-bot-api.md §1).

/** A method name as the Bot API spells them: letters only (nothing that could bend the upstream path). */
export const METHOD_NAME = /^[A-Za-z]{1,64}$/;

const ALSO_MESSAGES = new Set(['forwardmessage', 'forwardmessages', 'copymessage', 'copymessages']);

/** Calls that put a message in a chat: Telegram's per-chat and per-bot pacing applies to them. */
export function isMessage(method: string): boolean {
  const m = method.toLowerCase();
  // A chat action ("typing...") is no message: bots send one before most replies.
  return (m.startsWith('send') && m !== 'sendchataction') || ALSO_MESSAGES.has(m);
}

/** getUpdates holds its call open for its `timeout` (docs/protocols/telegram-bot-api.md §7). */
export function isLongPoll(method: string): boolean {
  return method.toLowerCase() === 'getupdates';
}

/**
 * What a recipient token may be allowed to call: sending into its one chat. Methods that read
 * (getUpdates, getChat...), act on other chats (forwardMessage, copyMessage) or administer the bot
 * are never on it.
 */
export const RECIPIENT_METHODS = [
  'sendMessage',
  'sendPhoto',
  'sendDocument',
  'sendAudio',
  'sendVideo',
  'sendAnimation',
  'sendVoice',
  'sendChatAction',
] as const;

/** The canonical spelling of a recipient method, or null when it is not one. */
export function recipientMethod(method: string): string | null {
  const m = method.toLowerCase();
  return RECIPIENT_METHODS.find((r) => r.toLowerCase() === m) ?? null;
}

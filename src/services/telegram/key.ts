// Bot key handling: a lenient shape check (it goes into the upstream URL path, so nothing that could
// change the path gets through) and a one-way id for rate-limit buckets and logs.
import { createHash } from 'node:crypto';

// docs/protocols/telegram-bot-api.md §1: `<bot_id>:<secret>`, ~35 chars of [A-Za-z0-9_-]; lenient on the
// lengths.
const BOT_KEY = /^\d{1,20}:[A-Za-z0-9_-]{20,80}$/;

export function isBotKey(s: string): boolean {
  return BOT_KEY.test(s);
}

/** A stable, non-reversible id of a bot key: the same on every instance (Redis-shared buckets). */
export function keyId(key: string): string {
  return createHash('sha256').update(`devutil-telegram:${key}`).digest('hex').slice(0, 24);
}

/** Replaces every occurrence of the key (and its URL-encoded form) in free text. */
export function scrubKey(text: string, key: string): string {
  if (!key) return text;
  let out = text.split(key).join('[redacted]');
  const enc = encodeURIComponent(key);
  if (enc !== key) out = out.split(enc).join('[redacted]');
  return out;
}

/** The bot's numeric id: the digits before the colon (public: it is in every message the bot sends). */
export function botIdOf(key: string): string {
  return key.slice(0, key.indexOf(':'));
}

/** The operator's list of bots (config telegram.allowedBots); an empty list allows every bot. */
export function botAllowed(key: string, allowed: readonly string[]): boolean {
  return allowed.length === 0 || allowed.includes(botIdOf(key));
}

export const NOT_LISTED =
  'this server relays only for the bots its operator listed (DEVUTIL_TELEGRAM_ALLOWED_BOTS)';

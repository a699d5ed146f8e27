// Recipient tokens: a bot's owner registers the bot key once per chat and hands out an opaque token
// that sends to that one chat only, so a CI job or an alerting webhook never holds the bot key.
// Records live in the shared blob store (local disk, or S3 shared by every instance), under the
// SHA-256 of the token: the store never holds a token, and the bot key in a record is sealed with a
// key derived from its token (AES-256-GCM), so a copy of the store alone sends nothing.
// Framework-free.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { readCapped } from '../../infra/egress/capped-body.ts';
import type { BlobStore } from '../../infra/storage/blob-store.ts';
import { botIdOf, keyId } from './key.ts';

export const TOKEN_PREFIX = 'tgr_';
// 32 random bytes in base64url (43 characters) after the prefix; the prefix lets secret scanners
// and the log redaction (infra/observe/redact.ts) recognise a token wherever it appears.
const TOKEN = /^tgr_[A-Za-z0-9_-]{43}$/;

const RECORDS = 'telegram/recipients/';
const BY_BOT = 'telegram/bots/';
const MAX_RECORD = 16 * 1024;

export function isRecipientToken(s: string): boolean {
  return TOKEN.test(s);
}

/** What a recipient is, as its owner lists it (never the token, never the bot key). */
export interface Recipient {
  /** Public handle for listing and revoking: the first 16 hex digits of the token's hash. */
  id: string;
  /** The bot's numeric id. */
  bot: string;
  /** The one chat it sends to: a numeric id, as Telegram resolved it at registration. */
  chat: string;
  /** The chat's title or name at registration, for the owner's listing. */
  chatTitle: string;
  name: string;
  /** Bot API methods it may call (sendMessage by default). */
  methods: string[];
  created: string;
}

interface Sealed {
  iv: string;
  ct: string;
  tag: string;
}

interface StoredRecord extends Recipient {
  v: 1;
  /** keyId() of the bot key: the owner's listing is found by it. */
  owner: string;
  key: Sealed;
}

export class RecipientLimit extends Error {
  override name = 'RecipientLimit';
}

const hashOf = (token: string) =>
  createHash('sha256').update(`devutil-telegram-recipient:${token}`).digest('hex');

function sealingKey(token: string, id: string): Buffer {
  return Buffer.from(hkdfSync('sha256', token, 'devutil-telegram-recipient', id, 32));
}

function seal(botKey: string, token: string, id: string): Sealed {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', sealingKey(token, id), iv);
  const ct = Buffer.concat([c.update(botKey, 'utf8'), c.final()]);
  return { iv: iv.toString('base64'), ct: ct.toString('base64'), tag: c.getAuthTag().toString('base64') };
}

function unseal(s: Sealed, token: string, id: string): string | null {
  try {
    const d = createDecipheriv('aes-256-gcm', sealingKey(token, id), Buffer.from(s.iv, 'base64'));
    d.setAuthTag(Buffer.from(s.tag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(s.ct, 'base64')), d.final()]).toString('utf8');
  } catch {
    return null;
  }
}

const publicView = (r: StoredRecord): Recipient => ({
  id: r.id,
  bot: r.bot,
  chat: r.chat,
  chatTitle: r.chatTitle,
  name: r.name,
  methods: r.methods,
  created: r.created,
});

export class RecipientStore {
  private readonly blobs: BlobStore;
  constructor(blobs: BlobStore) {
    this.blobs = blobs;
  }

  private async readJson(key: string): Promise<unknown> {
    const got = await this.blobs.get(key);
    if (!got) return null;
    const text = (await readCapped(got.body, MAX_RECORD)).toString('utf8');
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  }

  private async count(prefix: string, stopAt: number): Promise<number> {
    let n = 0;
    for await (const _ of this.blobs.list(prefix)) if (++n >= stopAt) break;
    return n;
  }

  /** A new token for one chat of the bot `botKey`. Throws RecipientLimit past either cap. */
  async create(
    botKey: string,
    r: { chat: string; chatTitle: string; name: string; methods: string[] },
    caps: { perBot: number; total: number },
  ): Promise<{ token: string; recipient: Recipient }> {
    const owner = keyId(botKey);
    if ((await this.count(`${BY_BOT}${owner}/`, caps.perBot)) >= caps.perBot)
      throw new RecipientLimit(
        `this bot has ${caps.perBot} recipient tokens, the most it may have; revoke one`,
      );
    if ((await this.count(RECORDS, caps.total)) >= caps.total)
      throw new RecipientLimit(`this server holds ${caps.total} recipient tokens, the most it may hold`);
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const hash = hashOf(token);
    const id = hash.slice(0, 16);
    const rec: StoredRecord = {
      v: 1,
      id,
      bot: botIdOf(botKey),
      chat: r.chat,
      chatTitle: r.chatTitle,
      name: r.name,
      methods: r.methods,
      created: new Date().toISOString(),
      owner,
      key: seal(botKey, token, id),
    };
    // The record first: an index line without its record is ignored by list(); the reverse would
    // be a token its owner cannot see.
    await this.blobs.put(`${RECORDS}${hash}`, Readable.from([Buffer.from(JSON.stringify(rec))]), {});
    await this.blobs.put(`${BY_BOT}${owner}/${id}`, Readable.from([Buffer.from(hash)]), {});
    return { token, recipient: publicView(rec) };
  }

  /** The recipient and the bot key behind `token`; null for an unknown, revoked or forged token. */
  async resolve(token: string): Promise<{ recipient: Recipient; botKey: string } | null> {
    if (!isRecipientToken(token)) return null;
    const hash = hashOf(token);
    const rec = (await this.readJson(`${RECORDS}${hash}`)) as StoredRecord | null;
    if (rec?.v !== 1 || rec.id !== hash.slice(0, 16)) return null;
    const botKey = unseal(rec.key, token, rec.id);
    if (!botKey || botIdOf(botKey) !== rec.bot) return null;
    return { recipient: publicView(rec), botKey };
  }

  /** Every recipient of the bot `botKey`, oldest first. */
  async list(botKey: string): Promise<Recipient[]> {
    const owner = keyId(botKey);
    const out: Recipient[] = [];
    for await (const e of this.blobs.list(`${BY_BOT}${owner}/`)) {
      const hash = (await this.readIndex(e.key)) ?? '';
      const rec = /^[0-9a-f]{64}$/.test(hash)
        ? ((await this.readJson(`${RECORDS}${hash}`)) as StoredRecord | null)
        : null;
      if (rec?.owner === owner) out.push(publicView(rec));
    }
    return out.sort((a, b) => a.created.localeCompare(b.created));
  }

  private async readIndex(key: string): Promise<string | null> {
    const got = await this.blobs.get(key);
    return got ? (await readCapped(got.body, 128)).toString('utf8') : null;
  }

  /** Revokes recipient `id` of the bot `botKey`: false when that bot has no such recipient. */
  async revoke(botKey: string, id: string): Promise<boolean> {
    if (!/^[0-9a-f]{16}$/.test(id)) return false;
    const owner = keyId(botKey);
    const index = `${BY_BOT}${owner}/${id}`;
    const hash = await this.readIndex(index);
    if (!hash || !/^[0-9a-f]{64}$/.test(hash)) return false;
    // The record goes first: once it is gone the token sends nothing, on every instance.
    await this.blobs.delete(`${RECORDS}${hash}`);
    await this.blobs.delete(index);
    return true;
  }
}

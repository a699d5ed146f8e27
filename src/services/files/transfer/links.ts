// The transfer.sh way's addresses: server-chosen keys, the links an upload answers with, and the
// key lists that name a bundle (/zip/<k1,k2,...>, /delete/<k1,k2,...>/<token>).
import { randomInt } from 'node:crypto';
import { badRequest } from '../../../infra/http/errors.ts';
import { validKey } from '../names.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** 12 of 62 characters: 71 random bits, so keys cannot be guessed or enumerated. */
const RANDOM_CHARS = 12;

/**
 * A fresh key for `filename`: random characters and the name's extension (lowercased, when it is
 * 1-10 letters or digits), so a link still says what it holds (`Xk3...q.png`).
 */
export function randomKey(filename: string): string {
  let key = '';
  for (let i = 0; i < RANDOM_CHARS; i++) key += ALPHABET[randomInt(ALPHABET.length)];
  const m = /\.([A-Za-z0-9]{1,10})$/.exec(filename);
  return m?.[1] ? `${key}.${m[1].toLowerCase()}` : key;
}

export interface Links {
  /** One download link per file, in upload order. */
  files: string[];
  /** The zip of every file (a bundle of two or more), else null. */
  zip: string | null;
  /** Deletes every file of the upload; it carries the owner token. */
  delete: string;
}

export function linksFor(base: string, keys: readonly string[], token: string): Links {
  const list = keys.join(',');
  return {
    files: keys.map((k) => `${base}/api/file/${k}`),
    zip: keys.length > 1 ? `${base}/zip/${list}` : null,
    delete: `${base}/delete/${list}/${token}`,
  };
}

/** The keys of a /zip or /delete path: 1..max valid keys, duplicates dropped; else 400. */
export function parseKeys(list: string, max: number): string[] {
  const keys = [...new Set(list.split(','))];
  if (keys.length > max) throw badRequest(`too many keys: at most ${max}`, 'TOO_MANY_KEYS');
  if (!keys.every(validKey))
    throw badRequest('invalid key list: keys of A-Z a-z 0-9 . _ - separated by commas', 'BAD_KEY');
  return keys;
}

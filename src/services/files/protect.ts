// Password-protected files, as transfer.sh offers them: X-Encrypt-Password on an upload stores the
// file as an OpenPGP message (pgp.ts) that `gpg -d` opens with the password alone; X-Decrypt-Password
// on a download gives the original back. The password is never stored or logged: what is kept is
// the S2K salt and count (in the message too) and a check value derived from the key, which tells a
// wrong password apart before any byte is sent and says nothing the message's own quick check
// (RFC 4880 5.13) does not. Each derivation costs 16 MiB of SHA-256: they share a fair queue.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AppError, badRequest, forbidden, unavailable } from '../../infra/http/errors.ts';
import { FairQueue, QueueFull } from '../../infra/limits/fair-queue.ts';
import { deriveKey, type S2k } from './pgp.ts';
import type { StoredFile } from './store.ts';

const HEADERS = { encrypt: 'X-Encrypt-Password', decrypt: 'X-Decrypt-Password' } as const;
/** 2^24 bytes hashed per derivation: tens of ms here, what makes each guess at a stored file cost. */
const S2K_CODED = 0xe0;
const MAX_PASSWORD_BYTES = 1024;
const CHECK_LABEL = 'devutil files password check';

/** What an upload stores with: the key and the metadata that lets a download derive it again. */
export interface Seal {
  key: Buffer;
  s2k: S2k;
  meta: Record<string, string>;
}

/** What the stored metadata says about a protected file. */
export interface Protection {
  s2k: S2k;
  check: string;
}

/**
 * The password a header carries, as the bytes the client sent (curl sends UTF-8 as is; gpg takes
 * the same bytes), or null when the header is absent; 400 when it is empty, repeated or too long.
 */
export function passwordOf(headers: IncomingHttpHeaders, which: keyof typeof HEADERS): Buffer | null {
  const label = HEADERS[which];
  const v = headers[label.toLowerCase()];
  if (v === undefined) return null;
  if (typeof v !== 'string' || v === '') throw badRequest(`give one non-empty ${label}`, 'BAD_PASSWORD');
  // Node reads header bytes as latin1: this gives back exactly what was sent.
  const bytes = Buffer.from(v, 'latin1');
  if (bytes.length > MAX_PASSWORD_BYTES)
    throw badRequest(`${label} is longer than ${MAX_PASSWORD_BYTES} bytes`, 'BAD_PASSWORD');
  return bytes;
}

const checkOf = (key: Buffer) =>
  createHmac('sha256', key).update(CHECK_LABEL).digest().subarray(0, 16).toString('base64url');

export function protectionOf(meta: Record<string, string>): Protection | null {
  const m = /^([0-9a-f]{16})\.(\d{1,3})$/.exec(meta['pgp-s2k'] ?? '');
  const check = meta['pgp-check'];
  if (!m?.[1] || !m[2] || !check) return null;
  return { s2k: { salt: Buffer.from(m[1], 'hex'), coded: Number(m[2]) }, check };
}

export interface KeyWorkOptions {
  /** Derivations running at once in this process. */
  concurrency: number;
}

/** Key derivations through a fair queue: one client's guesses cannot hold the others' downloads. */
export class KeyWork {
  private readonly queue: FairQueue;
  constructor(o: KeyWorkOptions) {
    this.queue = new FairQueue({
      concurrency: o.concurrency,
      queueLength: 16 * o.concurrency,
      clientShare: 0.5,
    });
  }

  private async derive(client: string, password: Buffer, s2k: S2k): Promise<Buffer> {
    try {
      return await this.queue.run(client, () => deriveKey(password, s2k));
    } catch (err) {
      if (err instanceof QueueFull)
        throw unavailable('too many password checks at once; retry shortly', 2, 'BUSY');
      throw err;
    }
  }

  /** A new seal for `password`: a fresh salt, the key and the metadata to store. */
  async seal(client: string, password: Buffer): Promise<Seal> {
    const s2k = { salt: randomBytes(8), coded: S2K_CODED };
    const key = await this.derive(client, password, s2k);
    return {
      key,
      s2k,
      meta: { 'pgp-s2k': `${s2k.salt.toString('hex')}.${s2k.coded}`, 'pgp-check': checkOf(key) },
    };
  }

  /** The key that opens a file protected by `p`; 403 when `password` is not its password. */
  async unlock(client: string, p: Protection, password: Buffer): Promise<Buffer> {
    const key = await this.derive(client, password, p.s2k);
    const a = Buffer.from(checkOf(key));
    const b = Buffer.from(p.check);
    if (a.length !== b.length || !timingSafeEqual(a, b))
      throw forbidden('X-Decrypt-Password does not open this file', 'BAD_PASSWORD');
    return key;
  }
}

/**
 * A protected file as what it is stored as, for a download without the password (and in zips): the
 * OpenPGP message, named `<name>.gpg`, for `gpg -d`.
 */
export function sealedView(f: StoredFile): StoredFile {
  return {
    ...f,
    filename: `${f.filename}.gpg`,
    mimetype: 'application/pgp-encrypted',
    size: f.stored,
    encoding: 'identity',
    protection: null,
  };
}

export const notSupported = (where: string) =>
  new AppError(
    'ENCRYPT_UNSUPPORTED',
    400,
    `X-Encrypt-Password is not offered for ${where}; use curl -T (PUT /<name>)`,
  );

// The symmetric subset of OpenPGP (RFC 4880, and RFC 9580's v1 formats) that password-protected
// files are stored in, streamed both ways: a SKESK v4 packet (AES-256, iterated and salted S2K over
// SHA-256, no encrypted session key: the S2K output is the key) and a SEIPD v1 packet (CFB with a
// zero IV over a random prefix, one literal data packet and the MDC), lengths as 64 KiB partial
// bodies so no length has to be known up front. `gpg -d` opens the result with the password alone.
// The decryptor reads only what the encryptor writes (files stored by this service).
import { createCipheriv, createDecipheriv, createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

const AES256 = 9;
const SHA256 = 8;
const S2K_ITERATED_SALTED = 3;
const TAG_SKESK = 3;
const TAG_LITERAL = 11;
const TAG_SEIPD = 18;
const TAG_MDC = 19;
const BLOCK = 16;
const ZERO_IV = Buffer.alloc(BLOCK);
/** Partial body lengths of 2^16 bytes: one length octet per 64 KiB. */
const CHUNK_LOG = 16;
const CHUNK = 1 << CHUNK_LOG;
const PARTIAL = Buffer.from([0xe0 | CHUNK_LOG]);
/** Literal data header: format 'b' (binary), an empty file name, a zero date. */
const LITERAL_HEADER = Buffer.from([0x62, 0, 0, 0, 0, 0]);
const MDC_HEADER = Buffer.from([0xc0 | TAG_MDC, 20]);

/** The S2K's salt and coded count (RFC 4880 3.7.1.3): what derives the key from a password. */
export interface S2k {
  salt: Buffer;
  coded: number;
}

export class PgpError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PgpError';
  }
}

/** Bytes hashed for a coded count: 0xE0 is 16 MiB, gpg's maximum 0xFF about 62 MiB. */
export const s2kCount = (coded: number): number => (16 + (coded & 15)) << ((coded >> 4) + 6);

/** Hashed between two turns of the event loop while deriving a key. */
const S2K_SLICE = 1 << 20;

/**
 * The key of `password` under `s2k`: SHA-256 over salt || password repeated to the count. Hashed
 * in slices with a turn of the event loop between them, so a derivation (tens of ms) never holds
 * the process.
 */
export async function deriveKey(password: Buffer, s2k: S2k): Promise<Buffer> {
  const unit = Buffer.concat([s2k.salt, password]);
  const total = Math.max(s2kCount(s2k.coded), unit.length);
  // Whole repetitions of the unit, so each update continues the sequence where the last one ended.
  const block = Buffer.concat(Array<Buffer>(Math.max(1, Math.floor((64 * 1024) / unit.length))).fill(unit));
  const h = createHash('sha256');
  let slice = 0;
  for (let left = total; left > 0; ) {
    const n = Math.min(left, block.length);
    h.update(block.subarray(0, n));
    left -= n;
    slice += n;
    if (slice >= S2K_SLICE && left > 0) {
      slice = 0;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
  return h.digest();
}

/** A packet length header: one, two or five octets (RFC 4880 4.2.2). */
function lengthHeader(n: number): Buffer {
  if (n < 192) return Buffer.from([n]);
  if (n < 8384) return Buffer.from([((n - 192) >> 8) + 192, (n - 192) & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = 0xff;
  b.writeUInt32BE(n, 1);
  return b;
}

/** Frames one packet's body as it comes: 64 KiB partial bodies, then the rest with a length. */
class Framer {
  private held: Buffer[] = [];
  private size = 0;
  private readonly out: (b: Buffer) => void;
  constructor(out: (b: Buffer) => void) {
    this.out = out;
  }

  /** Passes the bytes on as views, never copied. */
  write(b: Buffer): void {
    // A chunk goes out only once more bytes follow it: the last part must have a definite length.
    while (b.length > CHUNK - this.size) {
      const room = CHUNK - this.size;
      this.out(PARTIAL);
      for (const h of this.held) this.out(h);
      this.out(b.subarray(0, room));
      b = b.subarray(room);
      this.held = [];
      this.size = 0;
    }
    if (b.length) {
      this.held.push(b);
      this.size += b.length;
    }
  }

  end(): void {
    this.out(lengthHeader(this.size));
    for (const b of this.held) this.out(b);
    this.held = [];
  }
}

/** The SKESK v4 packet of `s2k`: AES-256, iterated and salted SHA-256, no encrypted session key. */
function skesk(s2k: S2k): Buffer {
  const body = Buffer.concat([
    Buffer.from([4, AES256, S2K_ITERATED_SALTED, SHA256]),
    s2k.salt,
    Buffer.from([s2k.coded]),
  ]);
  return Buffer.concat([Buffer.from([0xc0 | TAG_SKESK]), lengthHeader(body.length), body]);
}

/** At most this many bytes more than the plaintext (headers, prefix, MDC, a length octet per 64 KiB). */
export function encryptedOverhead(plain: number): number {
  return 96 + 2 * Math.ceil((plain + 1) / CHUNK);
}

/**
 * The OpenPGP message of the bytes written to it, encrypted with `key` (deriveKey of the same
 * `s2k`); `prefix` is the 16 random bytes the message starts with (crypto.randomBytes).
 */
export function encryptor(key: Buffer, s2k: S2k, prefix: Buffer): Transform {
  if (key.length !== 32 || prefix.length !== BLOCK)
    throw new RangeError('a 32-byte key and a 16-byte prefix');
  const cipher = createCipheriv('aes-256-cfb', key, ZERO_IV);
  const mdc = createHash('sha1');
  let t: Transform;
  const seipd = new Framer((b) => t.push(b));
  /** Plaintext of the SEIPD packet: hashed for the MDC (all but the MDC's own hash), then encrypted. */
  const plain = (b: Buffer, hashed = true) => {
    if (hashed) mdc.update(b);
    const c = cipher.update(b);
    if (c.length) seipd.write(c);
  };
  const literal = new Framer((b) => plain(b));
  t = new Transform({
    transform(chunk: Buffer, _e, cb) {
      literal.write(chunk);
      cb();
    },
    flush(cb) {
      literal.end();
      plain(MDC_HEADER);
      plain(mdc.digest(), false);
      const rest = cipher.final();
      if (rest.length) seipd.write(rest);
      seipd.end();
      cb();
    },
  });
  t.push(skesk(s2k));
  t.push(Buffer.from([0xc0 | TAG_SEIPD]));
  seipd.write(Buffer.from([1]));
  plain(Buffer.concat([prefix, prefix.subarray(BLOCK - 2)]));
  plain(Buffer.from([0xc0 | TAG_LITERAL]));
  literal.write(LITERAL_HEADER);
  return t;
}

interface UnframerEvents {
  start(tag: number): void;
  header(b: Buffer): void;
  body(tag: number, b: Buffer): void;
  end(tag: number): void;
}

/**
 * Reads a sequence of new-format packets as bytes arrive: `body` gets each packet's body bytes
 * (partial bodies joined), `header` the header bytes, `end` each packet's end.
 */
class Unframer {
  private state: 'tag' | 'len' | 'body' = 'tag';
  private tag = 0;
  private len: number[] = [];
  private left = 0;
  private partial = false;
  /** A packet is open (its last part not read yet). */
  open = false;
  private readonly on: UnframerEvents;
  constructor(on: UnframerEvents) {
    this.on = on;
  }

  write(b: Buffer): void {
    let i = 0;
    while (i < b.length) {
      if (this.state === 'body') {
        const n = Math.min(this.left, b.length - i);
        if (n > 0) this.on.body(this.tag, b.subarray(i, i + n));
        i += n;
        this.left -= n;
        if (this.left === 0) this.bodyDone();
        continue;
      }
      const o = b[i] as number;
      this.on.header(b.subarray(i, i + 1));
      i++;
      if (this.state === 'tag') {
        if ((o & 0xc0) !== 0xc0) throw new PgpError('not a new-format OpenPGP packet');
        this.tag = o & 0x3f;
        this.state = 'len';
        this.open = true;
        this.on.start(this.tag);
        continue;
      }
      this.len.push(o);
      const first = this.len[0] as number;
      let n: number | undefined;
      this.partial = false;
      if (first < 192) n = first;
      else if (first < 224) n = this.len.length === 2 ? ((first - 192) << 8) + o + 192 : undefined;
      else if (first < 255) {
        n = 1 << (first & 0x1f);
        this.partial = true;
      } else if (this.len.length === 5) n = Buffer.from(this.len.slice(1)).readUInt32BE(0);
      if (n === undefined) continue;
      this.len = [];
      this.left = n;
      this.state = 'body';
      if (n === 0) this.bodyDone();
    }
  }

  private bodyDone(): void {
    if (this.partial) {
      this.state = 'len';
      return;
    }
    this.state = 'tag';
    this.open = false;
    this.on.end(this.tag);
  }
}

/**
 * The plaintext of a message `encryptor` made with the same key. Bytes flow out as they are
 * decrypted; the MDC, which comes last, is checked at the end, and a mismatch (or a cut or
 * malformed message) fails the stream, so a reader never takes an altered file for a whole one.
 */
export function decryptor(key: Buffer): Transform {
  const decipher = createDecipheriv('aes-256-cfb', key, ZERO_IV);
  const mdc: Hash = createHash('sha1');
  let t: Transform;
  let prefix = Buffer.alloc(0);
  let literalSkip = LITERAL_HEADER.length;
  let literals = 0;
  let mdcSeen = false;
  const digest: Buffer[] = [];
  let seipdVersion = false;
  let seipdDone = false;
  let skeskSeen = false;

  const inner = new Unframer({
    // One literal data packet, then the MDC, then nothing.
    start(tag) {
      const ok = tag === TAG_LITERAL ? literals === 0 : tag === TAG_MDC && literals === 1 && !mdcSeen;
      if (!ok) throw new PgpError('unexpected packet inside the encrypted data');
      if (tag === TAG_LITERAL) literals++;
      else mdcSeen = true;
    },
    header(b) {
      mdc.update(b);
    },
    body(tag, b) {
      if (tag === TAG_MDC) {
        digest.push(b);
        return;
      }
      mdc.update(b);
      const skip = Math.min(literalSkip, b.length);
      literalSkip -= skip;
      if (b.length > skip) t.push(b.subarray(skip));
    },
    end() {},
  });
  const decrypted = (b: Buffer) => {
    if (prefix.length < BLOCK + 2) {
      const need = BLOCK + 2 - prefix.length;
      prefix = Buffer.concat([prefix, b.subarray(0, need)]);
      b = b.subarray(need);
      if (prefix.length < BLOCK + 2) return;
      mdc.update(prefix);
      if (prefix[BLOCK] !== prefix[BLOCK - 2] || prefix[BLOCK + 1] !== prefix[BLOCK - 1])
        throw new PgpError('the key does not open this message');
    }
    if (b.length) inner.write(b);
  };
  const outer = new Unframer({
    start(tag) {
      if (tag === TAG_SKESK && !skeskSeen) skeskSeen = true;
      else if (!(tag === TAG_SEIPD && skeskSeen && !seipdDone))
        throw new PgpError('not a password-encrypted OpenPGP message');
    },
    header() {},
    body(tag, b) {
      if (tag !== TAG_SEIPD) return;
      if (!seipdVersion) {
        if (b[0] !== 1) throw new PgpError('unsupported encrypted data version');
        seipdVersion = true;
        b = b.subarray(1);
      }
      const p = decipher.update(b);
      if (p.length) decrypted(p);
    },
    end(tag) {
      if (tag === TAG_SEIPD) seipdDone = true;
    },
  });
  t = new Transform({
    transform(chunk: Buffer, _e, cb: TransformCallback) {
      try {
        if (seipdDone && chunk.length) throw new PgpError('data after the encrypted message');
        outer.write(chunk);
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
    flush(cb) {
      const rest = decipher.final();
      try {
        if (rest.length) decrypted(rest);
      } catch (err) {
        return cb(err as Error);
      }
      const got = Buffer.concat(digest);
      if (!seipdDone || inner.open || got.length !== 20)
        return cb(new PgpError('the encrypted message is cut short'));
      if (!got.equals(mdc.digest()))
        return cb(new PgpError('the encrypted message fails its integrity check'));
      cb();
    },
  });
  return t;
}

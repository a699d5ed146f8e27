// The file store behind /api/file: streams an upload through hashing, limits and (when it pays)
// compression into the blob store, owns owner tokens, quota accounting and retention.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { pipeline, Readable, Transform } from 'node:stream';
import type { Logger } from 'pino';
import { humanBytes } from '../../infra/config/schema.ts';
import { AppError, conflict, forbidden, tooLarge } from '../../infra/http/errors.ts';
import { QuotaFullError, type Reservation, type SpaceQuota } from '../../infra/limits/quota.ts';
import { MemoryState } from '../../infra/state/memory.ts';
import {
  BlobExistsError,
  type BlobInfo,
  type BlobStore,
  type PresignOptions,
} from '../../infra/storage/blob-store.ts';
import { type Codec, decoder, type Encoding, encoder, sampleSaving } from './codec.ts';
import { DownloadCounter } from './download-counter.ts';
import {
  type Lifetime,
  type LifetimeResult,
  type Limits,
  lifetimeMeta,
  lifetimeOf,
  lifetimeResult,
} from './lifetime.ts';
import { ratio } from './names.ts';
import { alreadyCompressed, sniff, usableDeclaredType } from './sniff.ts';

export interface FilesOptions {
  maxBytes: number;
  quotaBytes: number;
  codec: Codec;
  level: number;
  minSavingPercent: number;
  maxAgeSec: number;
  minAgeSec: number;
}

export interface FileInfo {
  filename: string;
  mimetype: string;
  size: number;
  original_size: number;
  compressed: boolean;
  compressed_size: number;
  compression_ratio: string;
}

export interface StoredFile {
  key: string;
  filename: string;
  mimetype: string;
  /** Original length. */
  size: number;
  /** Bytes in the store. */
  stored: number;
  encoding: Encoding;
  sha256: string;
  lastModified: Date;
  /** fs: the stored bytes' own file under <blobs>/.data (X-Accel-Redirect); absent otherwise. */
  bodyFile?: string;
  /** Max-Downloads / Max-Days, when the upload set them. */
  lifetime?: Lifetime | null;
  /** SHA-256 of the owner token (hex): files uploaded together share it. */
  ownerHash: string;
}

export interface UploadInput {
  key: string;
  file: Readable;
  filename: string;
  declaredType: string | undefined;
  /** The caller's owner token, if any (X-Owner-Token or Authorization: Bearer). */
  token: string | undefined;
  /** The request's Content-Length, when declared: reserved against the quota before any byte is read. */
  declaredBytes?: number;
  signal?: AbortSignal;
  /** Resolves when the rest of the request is read and valid; rejecting aborts the upload. */
  afterBody?: () => Promise<void>;
  /** Max-Downloads / Max-Days; read after afterBody (form fields may follow the file part). */
  limits?: () => Limits;
  /** Bytes of this upload the quota counts already (the parts of a resumable upload). */
  credit?: number;
  /** The owner token a new key gets (the files of one bundle share one); default: a fresh one. */
  ownerToken?: string;
}

export interface FileStoreDeps {
  now: () => number;
  downloads: DownloadCounter;
}

export interface UploadResult {
  info: FileInfo;
  ownerToken?: string;
  /** Only when the upload set limits (data.lifetime). */
  lifetime?: LifetimeResult;
}

const SAMPLE = 64 * 1024;
const NS = 'files/';
/** One empty marker per file with limits: the sweeper reads these instead of every file's metadata. */
const LIMITED = 'file-limits/';
export const insufficientStorage = () => new AppError('STORAGE_FULL', 507, 'storage quota is full');

export const hashToken = (t: string) => createHash('sha256').update(t).digest('hex');

/** A new owner token: 32 characters, 192 random bits. */
export const newOwnerToken = () => randomBytes(24).toString('base64url');

export function tokenMatches(token: string | undefined, storedHash: string | undefined): boolean {
  if (!token || !storedHash) return false;
  const a = Buffer.from(hashToken(token), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export function toStored(key: string, info: BlobInfo): StoredFile {
  const m = info.meta;
  const enc = m['encoding'];
  return {
    key,
    filename: m['filename'] ?? key,
    mimetype: m['mimetype'] ?? 'application/octet-stream',
    size: Number(m['size'] ?? info.size),
    stored: info.size,
    encoding: enc === 'br' || enc === 'gzip' ? enc : 'identity',
    sha256: m['sha256'] ?? '',
    lastModified: info.lastModified,
    ...(info.bodyFile ? { bodyFile: info.bodyFile } : {}),
    lifetime: lifetimeOf(m),
    ownerHash: m['owner'] ?? '',
  };
}

/** Who a write stores for: a new key (a fresh owner token) or a replacement by the owner. */
interface Claim {
  ownerHash: string;
  /** Handed to the uploader of a new key, once. */
  ownerToken?: string;
  /** The key holds a live file that this write replaces. */
  replaces: boolean;
  /** The version this write replaces or clears (its download count goes with it). */
  previous: BlobInfo | null;
}

/** The first bytes of an upload, read to choose the type and the codec; `rest` yields the whole body. */
interface Head {
  sample: Buffer;
  empty: boolean;
  body: () => AsyncGenerator<Buffer>;
}

export class FileStore {
  private readonly blobs: BlobStore;
  private readonly o: FilesOptions;
  private readonly log: Logger;
  /** Stored bytes against quotaBytes (null = no quota), shared by every instance on one Redis. */
  quota: SpaceQuota | null = null;
  /** The one clock of this store (retention, Max-Days, resume grace); tests move it instead of waiting. */
  now: () => number;
  /** Download counts of files with Max-Downloads (index.ts passes the shared one). */
  downloads: DownloadCounter;
  constructor(blobs: BlobStore, o: FilesOptions, log: Logger, deps: Partial<FileStoreDeps> = {}) {
    this.blobs = blobs;
    this.o = o;
    this.log = log;
    this.now = deps.now ?? Date.now;
    this.downloads = deps.downloads ?? new DownloadCounter(new MemoryState(), 3_600_000);
  }

  /** Every stored file's blob key and size (the quota's full count). */
  async *listStored(): AsyncGenerator<[string, number]> {
    for await (const e of this.blobs.list(NS)) yield [e.key, e.size];
  }

  /** Seconds a file of `stored` bytes lives: fixed, or 0x0.st's cubic size rule; 0 = forever. */
  retentionSec(stored: number): number {
    const { maxAgeSec: max, minAgeSec: min } = this.o;
    if (max <= 0) return 0;
    if (min <= 0 || min >= max) return max;
    const x = Math.min(1, stored / this.o.maxBytes);
    return min + (min - max) * (x - 1) ** 3;
  }

  expired(stored: number, lastModified: Date, now = this.now()): boolean {
    const r = this.retentionSec(stored);
    return r > 0 && now - lastModified.getTime() > r * 1000;
  }

  /** Counts what `key` holds now after a change outside a reservation (deletes, expiry). */
  private async recount(blobKey: string): Promise<void> {
    await this.quota?.settle(blobKey);
  }

  /** Epoch ms at which `f` falls to the retention rule, or null when it is kept. */
  retentionEnd(f: StoredFile): number | null {
    const r = this.retentionSec(f.stored);
    return r > 0 ? f.lastModified.getTime() + r * 1000 : null;
  }

  /** The live file under `key`, or null (absent, past its retention or its Max-Days: then deleted). */
  async find(key: string): Promise<StoredFile | null> {
    const info = await this.blobs.head(NS + key);
    if (!info) return null;
    if (this.expired(info.size, info.lastModified)) return null;
    const f = toStored(key, info);
    const end = f.lifetime?.expiresAt ?? null;
    if (end !== null && this.now() >= end) {
      await this.removeVersion(f);
      return null;
    }
    return f;
  }

  /** Deletes `f` (and its download count) unless the key holds another version by now. */
  async removeVersion(f: StoredFile): Promise<void> {
    const cur = await this.blobs.head(NS + f.key);
    if (cur && cur.meta['sha256'] === f.sha256 && cur.meta['life-id'] === f.lifetime?.id) {
      if (await this.blobs.delete(NS + f.key)) await this.recount(NS + f.key);
      await this.blobs.delete(LIMITED + f.key);
    }
    if (f.lifetime) await this.downloads.close(`${f.key}:${f.lifetime.id}`);
  }

  /** Every stored file with limits (through the markers; markers of files gone are dropped). */
  async *limited(): AsyncGenerator<StoredFile> {
    for await (const e of this.blobs.list(LIMITED)) {
      const key = e.key.slice(LIMITED.length);
      const info = await this.blobs.head(NS + key);
      if (info?.meta['life-id']) yield toStored(key, info);
      else await this.blobs.delete(e.key);
    }
  }

  /** Stored bytes (for a client that accepts the stored encoding) or decoded bytes, optionally a range of them. */
  async open(
    file: StoredFile,
    o: { raw: boolean; range?: { start: number; end: number } },
  ): Promise<Readable | null> {
    if (file.encoding === 'identity' || o.raw) {
      const got = await this.blobs.get(NS + file.key, o.range);
      if (!got || got.info.meta['sha256'] !== file.sha256) {
        got?.body.destroy();
        return null; // replaced between head and get: the caller starts over
      }
      return got.body;
    }
    const got = await this.blobs.get(NS + file.key);
    if (!got || got.info.meta['sha256'] !== file.sha256) {
      got?.body.destroy();
      return null;
    }
    const decoded = pipeline(got.body, decoder(file.encoding), () => {});
    return o.range ? pipeline(decoded, slice(o.range.start, o.range.end), () => {}) : decoded;
  }

  /** A presigned URL for the stored bytes (S3 with presign support), or null. */
  async presign(file: StoredFile, o: PresignOptions): Promise<string | null> {
    return this.blobs.presign ? this.blobs.presign(NS + file.key, o) : null;
  }

  /** 409 unless `key` is free or `token` is its owner's (a resumable upload checks this at creation). */
  async assertWritable(key: string, token: string | undefined): Promise<void> {
    const info = await this.blobs.head(NS + key);
    if (info && !this.expired(info.size, info.lastModified) && !tokenMatches(token, info.meta['owner']))
      throw conflict('a file with this key exists; replacing it needs its owner token', 'KEY_EXISTS');
  }

  /**
   * Stores an upload under its key: checks who may write it, reserves its space, writes it (see
   * write), and counts the key once it is published, whatever happened after.
   */
  async upload(inp: UploadInput): Promise<UploadResult> {
    const claim = await this.claim(inp.key, inp.token, inp.ownerToken);
    // The declared length (an upper bound of the file) is reserved before the body is read, so N
    // concurrent uploads can never together pass the quota; without it, bytes are reserved as they come.
    let res: Reservation | null = null;
    try {
      const declared = Math.min(inp.declaredBytes ?? 0, this.o.maxBytes + 1);
      res = this.quota ? await this.quota.reserve(declared, inp.credit ?? 0) : null;
    } catch (err) {
      throw this.mapError(err);
    }
    let published = false;
    let file: StoredFile;
    try {
      file = await this.write(inp, claim, res, () => {
        published = true;
      });
    } finally {
      // The reservation is held until the key is counted (or given back when nothing was published).
      if (published) await (res ? res.settle(NS + inp.key) : this.recount(NS + inp.key));
      else await res?.release();
    }
    // The version it replaced takes its download count along; a new version counts from zero.
    const old = claim.previous ? lifetimeOf(claim.previous.meta) : null;
    if (old) await this.downloads.close(`${inp.key}:${old.id}`);
    if (file.lifetime) await this.blobs.put(LIMITED + inp.key, Readable.from([]), {});
    this.log.debug(
      { key: inp.key, size: file.size, stored: file.stored, encoding: file.encoding },
      'file stored',
    );
    return {
      info: fileInfo(file),
      ...(claim.ownerToken ? { ownerToken: claim.ownerToken } : {}),
      ...(file.lifetime ? { lifetime: lifetimeResult(file.lifetime) } : {}),
    };
  }

  /** The owner of `key` after this write: its owner replacing it, or a new owner of a free key. */
  private async claim(key: string, token: string | undefined, fresh?: string): Promise<Claim> {
    const existing = await this.blobs.head(NS + key);
    if (existing && !this.expired(existing.size, existing.lastModified)) {
      if (!tokenMatches(token, existing.meta['owner']))
        throw conflict('a file with this key exists; replacing it needs its owner token', 'KEY_EXISTS');
      return { ownerHash: existing.meta['owner'] ?? '', replaces: true, previous: existing };
    }
    // A file past its retention is cleared first: the key is free.
    if (existing && (await this.blobs.delete(NS + key))) await this.recount(NS + key);
    const ownerToken = fresh ?? newOwnerToken();
    return { ownerHash: hashToken(ownerToken), ownerToken, replaces: false, previous: existing };
  }

  /**
   * Streams the upload into the blob store: the first bytes choose the type and whether to
   * compress; every byte is hashed, counted against maxBytes and reserved as it arrives. Calls
   * `published` once the blob is visible under its key.
   */
  private async write(
    inp: UploadInput,
    claim: Claim,
    res: Reservation | null,
    published: () => void,
  ): Promise<StoredFile> {
    const head = await this.readHead(inp.file);
    const mimetype = usableDeclaredType(inp.declaredType) ?? sniff(head.sample, inp.filename);
    const codec = this.codecFor(head, mimetype);
    const counted = this.meter(res);
    const src = pipeline(head.body, counted.stream, () => {}) as unknown as Readable;
    const body = codec ? pipeline(src, encoder(codec, this.o.level), () => {}) : src;
    const meta = { filename: inp.filename, mimetype, encoding: codec ?? 'identity', owner: claim.ownerHash };
    let stored: BlobInfo;
    try {
      stored = await this.blobs.put(NS + inp.key, body, meta, {
        ifAbsent: !claim.replaces,
        ...(inp.signal ? { signal: inp.signal } : {}),
        finalize: async () => {
          await inp.afterBody?.();
          return {
            size: String(counted.bytes()),
            sha256: counted.sha256(),
            created: new Date(this.now()).toISOString(),
            ...lifetimeMeta(inp.limits?.() ?? {}, this.now()),
          };
        },
      });
    } catch (err) {
      throw this.mapError(err);
    }
    published();
    const file = toStored(inp.key, stored);
    // The sample promised a saving the whole file did not deliver: keep the plain bytes instead.
    if (codec && stored.size > counted.bytes() * (1 - this.o.minSavingPercent / 100))
      return this.storeDecoded(file);
    return file;
  }

  /** Reads up to SAMPLE bytes of `file`; the rest follows them in `body()`. */
  private async readHead(file: Readable): Promise<Head> {
    const it = file[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const chunks: Buffer[] = [];
    let length = 0;
    let ended = false;
    try {
      while (length < SAMPLE) {
        const r = await it.next();
        if (r.done) {
          ended = true;
          break;
        }
        chunks.push(r.value);
        length += r.value.length;
      }
    } catch (err) {
      throw this.mapError(err);
    }
    return {
      sample: Buffer.concat(chunks).subarray(0, SAMPLE),
      empty: length === 0,
      body: async function* () {
        yield* chunks;
        while (!ended) {
          const r = await it.next();
          if (r.done) return;
          yield r.value;
        }
      },
    };
  }

  /** The codec to store with, when the sample says it pays; null = as is. */
  private codecFor(head: Head, mimetype: string): 'br' | 'gzip' | null {
    const codec = this.o.codec;
    if (codec === 'none' || head.empty || alreadyCompressed(mimetype)) return null;
    return sampleSaving(codec, this.o.level, head.sample) * 100 >= this.o.minSavingPercent ? codec : null;
  }

  /**
   * Counts, hashes and caps the original bytes, reserving them as they pass. Original bytes bound
   * the stored ones (a compressed copy is kept only when smaller), so reserving the original length
   * is enough whatever the codec does.
   */
  private meter(res: Reservation | null): { stream: Transform; bytes: () => number; sha256: () => string } {
    const maxBytes = this.o.maxBytes;
    const hash = createHash('sha256');
    const mapError = (err: unknown) => this.mapError(err);
    let original = 0;
    const stream = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        original += chunk.length;
        if (original > maxBytes)
          return cb(tooLarge(`file exceeds the upload limit of ${humanBytes(maxBytes)}`));
        hash.update(chunk);
        if (!res) return cb(null, chunk);
        res.ensure(original).then(
          () => cb(null, chunk),
          (err: unknown) => cb(mapError(err) as Error),
        );
      },
    });
    return { stream, bytes: () => original, sha256: () => hash.digest('hex') };
  }

  private mapError(err: unknown): unknown {
    if (err instanceof BlobExistsError) return conflict('a file with this key exists', 'KEY_EXISTS');
    if (err instanceof AppError) return err;
    if (err instanceof QuotaFullError) return insufficientStorage();
    // @fastify/multipart's per-file limit (FST_REQ_FILE_TOO_LARGE) and friends carry 413.
    if ((err as { statusCode?: number } | null)?.statusCode === 413)
      return tooLarge(`file exceeds the upload limit of ${humanBytes(this.o.maxBytes)}`);
    return err;
  }

  /**
   * Replaces the (valid) compressed copy by the plain bytes, decoded from the store, unless
   * someone replaced the file meanwhile.
   */
  private async storeDecoded(file: StoredFile): Promise<StoredFile> {
    const body = await this.open(file, { raw: false });
    if (!body) return file;
    const cur = await this.blobs.head(NS + file.key);
    if (!cur || cur.meta['sha256'] !== file.sha256) {
      body.destroy();
      return file;
    }
    const info = await this.blobs.put(NS + file.key, body, { ...cur.meta, encoding: 'identity' });
    return toStored(file.key, info);
  }

  async remove(key: string, token: string | undefined): Promise<void> {
    const info = await this.blobs.head(NS + key);
    if (!info || this.expired(info.size, info.lastModified)) {
      throw new AppError('NOT_FOUND', 404, 'no file with this key');
    }
    if (!tokenMatches(token, info.meta['owner']))
      throw forbidden('deleting needs the owner token', 'BAD_TOKEN');
    if (await this.blobs.delete(NS + key)) await this.recount(NS + key);
    const life = lifetimeOf(info.meta);
    if (life) {
      await this.blobs.delete(LIMITED + key);
      await this.downloads.close(`${key}:${life.id}`);
    }
  }

  /** Deletes every expired file; returns how many. */
  async sweep(now = this.now()): Promise<number> {
    if (this.o.maxAgeSec <= 0) return 0;
    let n = 0;
    for await (const e of this.blobs.list(NS)) {
      if (!this.expired(e.size, e.lastModified, now)) continue;
      if (await this.blobs.delete(e.key)) {
        await this.recount(e.key);
        n++;
      }
    }
    return n;
  }
}

/** The 2.1 file_info of a stored file. */
function fileInfo(file: StoredFile): FileInfo {
  return {
    filename: file.filename,
    mimetype: file.mimetype,
    size: file.size,
    original_size: file.size,
    compressed: file.encoding !== 'identity',
    compressed_size: file.stored,
    compression_ratio: file.encoding === 'identity' ? '0.00%' : ratio(file.size, file.stored),
  };
}

/** Passes only bytes [start, end] (inclusive) of the stream, then ends it. */
function slice(start: number, end: number): Transform {
  let pos = 0;
  const t: Transform = new Transform({
    transform(chunk: Buffer, _e, cb) {
      const from = Math.max(0, start - pos);
      const to = Math.min(chunk.length, end - pos + 1);
      pos += chunk.length;
      if (to > from) t.push(chunk.subarray(from, to));
      if (pos > end) {
        t.push(null);
        // Nothing more is needed: stop decoding the rest.
        return cb();
      }
      cb();
    },
  });
  return t;
}

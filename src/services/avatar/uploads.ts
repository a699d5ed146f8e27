// Avatars uploaded here (issue 8 "Uploaded here"), kept in the shared blob store. The image lives
// at avatars/<sha256> (normalised: square crop, at most 2048 px, EXIF stripped, re-encoded) and an
// MD5 lookup goes through a tiny alias blob at avatars/<md5> naming that SHA-256. An upload by MD5
// alone (no address given) gets the stand-in key sha256("md5:" + md5), so the layout stays one.
// Lookups are remembered briefly per instance; a change is announced (index.ts: Redis pub/sub) so
// every instance forgets its lookup at once, and the remembering only bounds a lost announcement.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Metadata, OutputInfo } from 'sharp';
import { loadSharp } from '../../infra/media/sharp.ts';
import type { BlobStore } from '../../infra/storage/blob-store.ts';
import type { Rating } from './request.ts';
import { emailHashes, type HashKind } from './seed.ts';

export const MAX_SIDE = 2048;
const LOOKUP_MAX = 20_000;

/** The hashes an upload or delete changed: what every instance must forget. */
export interface Changed {
  sha256: string;
  md5: string | null;
}

export interface UploadRef {
  sha256: string;
  rating: Rating;
  version: string;
  lastModified: Date;
}

export interface StoredUpload extends UploadRef {
  md5: string | null;
  width: number;
}

export class UploadError extends Error {
  readonly status: number;
  constructor(
    message: string,
    /** 400 for a bad image, 413 for one past the pixel limit. */
    status = 400,
  ) {
    super(message);
    this.status = status;
  }
}

export class Uploads {
  private memo = new Map<string, { ref: UploadRef | null; until: number }>();
  /** Bumped by every forget: a lookup that started before one must not be remembered after it. */
  private epoch = 0;
  /** Told after every upload and delete (awaited before the caller hears it is done). */
  onChange: ((c: Changed) => Promise<void>) | null = null;

  private readonly blobs: BlobStore;
  private readonly maxPixels: number;
  private readonly lookupTtlMs: number;
  /** `lookupTtlMs`: how long a lookup is remembered (bounds staleness if an announcement is lost). */
  constructor(blobs: BlobStore, maxPixels: number, lookupTtlMs = 10_000) {
    this.blobs = blobs;
    this.maxPixels = maxPixels;
    this.lookupTtlMs = lookupTtlMs;
  }

  async find(hex: string, kind: HashKind): Promise<UploadRef | null> {
    const now = Date.now();
    const m = this.memo.get(hex);
    if (m && m.until > now) return m.ref;
    const epoch = this.epoch;
    let sha = hex;
    if (kind === 'md5') {
      const alias = await this.blobs.head(`avatars/${hex}`);
      sha = alias?.meta['sha256'] ?? '';
    }
    const info = sha ? await this.blobs.head(`avatars/${sha}`) : null;
    const ref: UploadRef | null = info
      ? {
          sha256: sha,
          rating: (info.meta['rating'] as Rating | undefined) ?? 'g',
          version: versionOf(info),
          lastModified: info.lastModified,
        }
      : null;
    this.memo.delete(hex);
    if (this.lookupTtlMs > 0 && epoch === this.epoch)
      this.memo.set(hex, { ref, until: now + this.lookupTtlMs });
    if (this.memo.size > LOOKUP_MAX) this.memo.delete(this.memo.keys().next().value as string);
    return ref;
  }

  async load(ref: UploadRef): Promise<Buffer> {
    const got = await this.blobs.get(`avatars/${ref.sha256}`);
    if (!got) throw new UploadError('uploaded avatar vanished');
    const chunks: Buffer[] = [];
    for await (const c of got.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  /** Normalises and stores an image for a hash (and, when given, both hashes of the address). */
  async put(
    hex: string,
    kind: HashKind,
    email: string | null,
    input: Buffer,
    rating: Rating,
  ): Promise<StoredUpload> {
    let md5: string | null = kind === 'md5' ? hex : null;
    let sha = kind === 'sha256' ? hex : null;
    if (email !== null) {
      const h = emailHashes(email);
      if (h[kind] !== hex) throw new UploadError('the address does not match the hash in the path');
      md5 = h.md5;
      sha = h.sha256;
    }
    sha ??= createHash('sha256').update(`md5:${md5}`).digest('hex');
    const { data, info } = await normalise(input, this.maxPixels);
    // The content digest is the version (ETags, cache keys): S3 times have whole seconds, and
    // two uploads within one second must still differ.
    const digest = createHash('sha256').update(data).update(rating).digest('hex').slice(0, 32);
    const meta: Record<string, string> = { rating, width: String(info.width), type: 'image/webp', digest };
    if (md5) meta['md5'] = md5;
    const stored = await this.blobs.put(`avatars/${sha}`, Readable.from([data]), meta);
    if (md5) await this.blobs.put(`avatars/${md5}`, Readable.from([Buffer.alloc(0)]), { sha256: sha });
    await this.changed(sha, md5);
    return {
      sha256: sha,
      md5,
      rating,
      width: info.width,
      version: digest,
      lastModified: stored.lastModified,
    };
  }

  /** Removes the image and its MD5 alias; true if there was one. */
  async delete(hex: string, kind: HashKind): Promise<boolean> {
    let sha = hex;
    let md5: string | null = kind === 'md5' ? hex : null;
    if (kind === 'md5') {
      const alias = await this.blobs.head(`avatars/${hex}`);
      sha = alias?.meta['sha256'] ?? '';
    }
    const info = sha ? await this.blobs.head(`avatars/${sha}`) : null;
    md5 ??= info?.meta['md5'] ?? null;
    const removed = sha ? await this.blobs.delete(`avatars/${sha}`) : false;
    const aliasRemoved = md5 ? await this.blobs.delete(`avatars/${md5}`) : false;
    if (sha || md5) await this.changed(sha, md5);
    return removed || aliasRemoved;
  }

  /** Moves on with every change seen here or announced by another instance. */
  get generation(): number {
    return this.epoch;
  }

  /** Drops remembered lookups of these hashes (a change here or on another instance). */
  forget(sha: string, md5: string | null): void {
    this.epoch++;
    this.memo.delete(sha);
    if (md5) this.memo.delete(md5);
  }

  /** Drops every remembered lookup (announcements may have been missed). */
  forgetAll(): void {
    this.epoch++;
    this.memo.clear();
  }

  private async changed(sha: string, md5: string | null): Promise<void> {
    this.forget(sha, md5);
    await this.onChange?.({ sha256: sha, md5 });
  }
}

/** The stored content's digest; older uploads (without one) fall back to time and size. */
function versionOf(info: { meta: Record<string, string>; lastModified: Date; size: number }): string {
  const d = info.meta['digest'];
  return d && /^[0-9a-f]{32}$/.test(d) ? d : `${info.lastModified.getTime()}-${info.size}`;
}

/** Square centre crop (attention-weighted), at most MAX_SIDE, orientation applied, metadata gone. */
export async function normalise(
  input: Buffer,
  maxPixels: number,
): Promise<{ data: Buffer; info: OutputInfo }> {
  // Outside the try below: a server without sharp answers that, not "not an image".
  const sharp = await loadSharp();
  let meta: Metadata;
  try {
    // Header only (no decode), so the pixel limit is checked below with a clear answer.
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch {
    throw new UploadError('not an image this service can read');
  }
  if (!['jpeg', 'png', 'gif', 'webp', 'avif', 'heif', 'tiff'].includes(meta.format ?? ''))
    throw new UploadError('unsupported image format; use PNG, JPEG, GIF or WebP');
  // Checked from the header before decoding: a small file can declare a huge canvas.
  if ((meta.width ?? 0) * (meta.height ?? 0) > maxPixels)
    throw new UploadError(`image has more than ${maxPixels} pixels`, 413);
  const side = Math.min(meta.width ?? 0, meta.height ?? 0, MAX_SIDE);
  if (side < 1) throw new UploadError('image has no pixels');
  try {
    return await sharp(input, { limitInputPixels: maxPixels, failOn: 'error' })
      .rotate()
      .resize(side, side, { fit: 'cover', position: 'attention' })
      .webp({ quality: 92, alphaQuality: 100 })
      .toBuffer({ resolveWithObject: true });
  } catch {
    throw new UploadError('image could not be decoded');
  }
}

// The blob store contract shared by file storage and avatars: local disk (default) or S3-compatible.
// Implementations live beside this file (blob-fs.ts, blob-s3.ts) and are chosen by config.storage.
// Keys are namespaced by the caller ("files/<key>", "avatars/<hash>"); metadata is small strings
// that travel with the object (S3 user metadata / a sidecar written atomically on disk).

import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { installLine } from '../config/extras.ts';
import { AppError } from '../http/errors.ts';

const S3_PACKAGES = ['@aws-sdk/client-s3', '@aws-sdk/lib-storage', '@aws-sdk/s3-request-presigner'];

export interface BlobInfo {
  key: string;
  /** Bytes stored (after any compression the caller applied). */
  size: number;
  meta: Record<string, string>;
  lastModified: Date;
  /**
   * fs only: the immutable body file, relative to the store's body directory (<root>/.data), for
   * a front proxy to send itself (X-Accel-Redirect). Absent for blobs of earlier versions.
   */
  bodyFile?: string;
}

export interface PutOptions {
  /** Create only: fail with BlobExistsError if the key exists (atomic where the backend allows). */
  ifAbsent?: boolean;
  /** Abort the write (nothing becomes visible) when this signal fires. */
  signal?: AbortSignal;
  /**
   * Called once the body is fully read, before the blob becomes visible: its result is merged into
   * `meta` (hashes, sizes known only at the end). Throwing aborts the write and nothing is visible.
   */
  finalize?: () => Record<string, string> | Promise<Record<string, string>>;
}

/** A listing row: enough for sweepers and quota accounting (no metadata round trip). */
export interface BlobEntry {
  key: string;
  size: number;
  lastModified: Date;
}

/**
 * The backend cannot be reached or failed on its side (network error, timeout, 5xx). It is an
 * AppError, so any route that lets it through answers 503 with Retry-After instead of a 500.
 */
export class BlobUnavailableError extends AppError {
  constructor(cause: unknown) {
    super('STORAGE_UNAVAILABLE', 503, 'storage backend unavailable; try again shortly', {
      cause,
      headers: { 'retry-after': 5 },
    });
    this.name = 'BlobUnavailableError';
  }
}

export class BlobExistsError extends Error {
  constructor(key: string) {
    super(`blob exists: ${key}`);
    this.name = 'BlobExistsError';
  }
}

export interface BlobStore {
  readonly kind: 'fs' | 's3';
  /** Streams `body` into the store; nothing is visible under `key` until the whole body is durable. */
  put(key: string, body: Readable, meta: Record<string, string>, opts?: PutOptions): Promise<BlobInfo>;
  /**
   * The blob and a stream of its bytes (or of the inclusive byte range, which must lie within the
   * blob: callers check the size with head() first), or null if absent.
   */
  get(
    key: string,
    range?: { start: number; end: number },
  ): Promise<{ info: BlobInfo; body: Readable } | null>;
  head(key: string): Promise<BlobInfo | null>;
  /** True if something was removed. */
  delete(key: string): Promise<boolean>;
  /** Readiness probe: resolves when the backend answers. */
  ping(): Promise<void>;
  /** Every blob whose key starts with `prefix` (e.g. "files/"). */
  list(prefix: string): AsyncIterable<BlobEntry>;
  /** Releases connections and timers. */
  close(): Promise<void>;
  /**
   * Removes what crashed writers left (s3: stale staging objects, incomplete multipart uploads
   * under BLOB_NAMESPACES); never throws. The files sweeper calls it; it also runs at start-up.
   */
  sweepAbandoned?(): Promise<{ removed: number; aborted: number }>;
  /** s3 only: a short-lived URL that lets its holder GET the blob directly (a secret: never log it). */
  presign?(key: string, o: PresignOptions): Promise<string>;
}

/** What a presigned download answers with: S3 overrides its stored headers with these. */
export interface PresignOptions {
  expiresSec: number;
  contentType?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  cacheControl?: string;
}

/** Meta keys travel as S3 user metadata, which lowercases names: keep them to `[a-z0-9-]`. */
export const META_KEY = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Throws on a meta key that would not survive S3 unchanged (both backends, for the same behaviour). */
export function checkMeta(meta: Record<string, string>): void {
  for (const k of Object.keys(meta)) {
    if (!META_KEY.test(k)) throw new Error(`invalid blob metadata key: ${JSON.stringify(k.slice(0, 80))}`);
  }
}

/**
 * The top-level namespaces devutil writes blobs under (files and their limit markers, resumable uploads, avatars, Telegram
 * recipients). Cleanup of what crashed writers leave in a possibly shared bucket touches these and
 * nothing else: a service that writes under a new namespace adds it here.
 */
export const BLOB_NAMESPACES = ['files/', 'file-limits/', 'uploads/', 'avatars/', 'telegram/'] as const;

/** Margin over the longest request: the store's timeouts after the body ends, and clock skew. */
const INCOMPLETE_MARGIN_MS = 15 * 60_000;
const INCOMPLETE_FLOOR_MS = 3600_000;

/**
 * How old an incomplete multipart upload must be before it is aborted: an explicit setting, else
 * longer than any upload may legitimately run. Every multipart upload devutil makes lives inside
 * one request (a file upload, one tus PATCH, an avatar), so the whole-request timeout bounds it;
 * without one, the resumable-upload expiry (an upload idle that long is abandoned anyway).
 */
export function incompleteUploadAgeMs(o: {
  explicitSec: number;
  requestTimeoutMs: number;
  uploadExpirySec: number;
}): number {
  if (o.explicitSec > 0) return o.explicitSec * 1000;
  const longest = o.requestTimeoutMs > 0 ? o.requestTimeoutMs : o.uploadExpirySec * 1000;
  return Math.max(INCOMPLETE_FLOOR_MS, longest + INCOMPLETE_MARGIN_MS);
}

/** Blob keys: "/"-separated segments of `A-Z a-z 0-9 . _ -`, none empty, none starting with ".". */
export const BLOB_KEY = /^(?:[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\/){0,7}[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

export interface BlobStoreConfig {
  backend: 'fs' | 's3';
  /** For fs: blobs live in <dataDir>/blobs; for s3: the upload journal in <dataDir>/s3-uploads. */
  dataDir: string;
  s3Endpoint: string;
  s3Bucket: string;
  s3Region: string;
  s3AccessKeyId: string;
  s3SecretAccessKey: string;
  s3ForcePathStyle: boolean;
  s3TimeoutMs?: number;
  /** s3: incomplete multipart uploads older than this are aborted (default 6 h). */
  s3IncompleteUploadAgeMs?: number;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

/**
 * The configured store, initialised (fs: stale temporary files of dead writers removed; s3: stale
 * staging objects removed). Backends load lazily so the AWS SDK is only imported when used.
 */
export async function createBlobStore(cfg: BlobStoreConfig): Promise<BlobStore> {
  if (cfg.backend === 's3') {
    const { S3BlobStore } = await import('./s3.ts').catch((err: unknown) => {
      // The AWS SDK is an optional dependency (docs/deployment.md, "Lean install"): say how to install it.
      if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND')
        throw new Error(
          `storage.backend=s3 needs the optional packages of the AWS SDK: ${installLine(S3_PACKAGES)}`,
          { cause: err },
        );
      throw err;
    });
    const store = new S3BlobStore({
      endpoint: cfg.s3Endpoint,
      bucket: cfg.s3Bucket,
      region: cfg.s3Region,
      accessKeyId: cfg.s3AccessKeyId,
      secretAccessKey: cfg.s3SecretAccessKey,
      forcePathStyle: cfg.s3ForcePathStyle,
      timeoutMs: cfg.s3TimeoutMs ?? 10_000,
      incompleteUploadAgeMs: cfg.s3IncompleteUploadAgeMs,
      journalDir: `${cfg.dataDir}/s3-uploads`,
      logger: cfg.logger,
    });
    await store.init();
    return store;
  }
  const { FsBlobStore } = await import('./fs.ts');
  const store = new FsBlobStore(`${cfg.dataDir}/blobs`);
  await store.init();
  return store;
}

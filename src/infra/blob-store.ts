// The blob store contract shared by file storage and avatars: local disk (default) or S3-compatible.
// Implementations live beside this file (blob-fs.ts, blob-s3.ts) and are chosen by config.files.
// Keys are namespaced by the caller ("files/<key>", "avatars/<hash>"); metadata is small strings
// that travel with the object (S3 user metadata / a sidecar written atomically on disk).
import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  /** Bytes stored (after any compression the caller applied). */
  size: number;
  meta: Record<string, string>;
  lastModified: Date;
}

export interface PutOptions {
  /** Create only: fail with BlobExistsError if the key exists (atomic where the backend allows). */
  ifAbsent?: boolean;
  /** Abort the write (nothing becomes visible) when this signal fires. */
  signal?: AbortSignal;
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
  /** The blob and a stream of its bytes (or of the inclusive byte range), or null if absent. */
  get(key: string, range?: { start: number; end: number }): Promise<{ info: BlobInfo; body: Readable } | null>;
  head(key: string): Promise<BlobInfo | null>;
  /** True if something was removed. */
  delete(key: string): Promise<boolean>;
  /** Readiness probe: resolves when the backend answers. */
  ping(): Promise<void>;
}

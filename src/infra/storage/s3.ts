// S3-compatible blob store (AWS S3, MinIO, R2, s3rver): streaming multipart uploads through
// @aws-sdk/lib-storage, metadata as object user metadata so instances can share one bucket.
// Uploads whose metadata is only known at the end (finalize) go to a staging key first and are
// published by a server-side CopyObject with the final metadata: the object appears complete or not.
import { randomUUID } from 'node:crypto';
import { pipeline, type Readable, Transform } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Logger } from 'pino';
import { KeyedMutex } from '../limits/keyed-mutex.ts';
import {
  BLOB_KEY,
  BLOB_NAMESPACES,
  type BlobEntry,
  BlobExistsError,
  type BlobInfo,
  type BlobStore,
  BlobUnavailableError,
  checkMeta,
  type PresignOptions,
  type PutOptions,
} from './blob-store.ts';
import { abortIncompleteUploads, MultipartListingUnsupported } from './s3-incomplete.ts';
import { UploadJournal } from './s3-journal.ts';

export interface S3Options {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
  /** Socket inactivity timeout per request. */
  timeoutMs?: number;
  /**
   * Incomplete multipart uploads under devutil's namespaces initiated longer ago than this are
   * aborted (at start-up and by sweepAbandoned): longer than any upload may legitimately run.
   */
  incompleteUploadAgeMs?: number;
  /**
   * Where this node journals its multipart uploads in flight (<dataDir>/s3-uploads), so that the
   * next start aborts those a killed process left, whatever their age. None: only the sweep.
   */
  journalDir?: string;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

const STAGING = '.staging/';
/** Staging objects older than this belong to a dead or wedged writer. */
const STALE_MS = 6 * 3600 * 1000;
/** S3 user metadata is sent as HTTP headers: values are percent-encoded to stay ASCII. */
const enc = (v: string) => encodeURIComponent(v);
const dec = (v: string) => {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

function status(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function toInfo(key: string, size: number, meta: Record<string, string> | undefined, lm?: Date): BlobInfo {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta ?? {})) out[k.toLowerCase()] = dec(v);
  return { key, size, meta: out, lastModified: lm ?? new Date(0) };
}

export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly bucket: string;
  /** Serialises the create-only check-and-publish per key inside this process. */
  private readonly locks = new KeyedMutex();
  private readonly incompleteAgeMs: number;
  private readonly log: Pick<Logger, 'info' | 'warn' | 'debug'> | undefined;
  /** The store has no ListMultipartUploads (s3rver): said once, then not asked again. */
  private multipartListing = true;
  /** A failing sweep is logged as a warning once, then at debug until one succeeds. */
  private sweepFailing = false;
  private readonly journal: UploadJournal | null;

  constructor(o: S3Options) {
    if (!o.bucket)
      throw new Error('storage.s3Bucket (DEVUTIL_STORAGE_S3_BUCKET) is required when backend=s3');
    const cfg: S3ClientConfig = {
      region: o.region || 'us-east-1',
      forcePathStyle: o.forcePathStyle,
      // Checksums only where S3 requires them: several S3-compatible servers reject the newer
      // default CRC headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    };
    if (o.endpoint) cfg.endpoint = o.endpoint;
    if (o.accessKeyId) cfg.credentials = { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey };
    // A down or hung store must answer quickly (503), not hold requests: short connect timeout, a
    // socket-inactivity timeout (streams that keep moving are not cut), one retry.
    cfg.requestHandler = {
      connectionTimeout: 2000,
      requestTimeout: o.timeoutMs ?? 10_000,
      throwOnRequestTimeout: true,
    };
    cfg.maxAttempts = 2;
    this.client = new S3Client(cfg);
    // Outermost middleware: every command (Upload's too) reports backend trouble as BlobUnavailableError.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (err) {
          const code = status(err);
          const aborted = (err as Error | null)?.name === 'AbortError';
          if (!aborted && (code === undefined || code >= 500)) throw new BlobUnavailableError(err);
          throw err;
        }
      },
      { step: 'initialize', name: 'devutilUnavailable' },
    );
    this.bucket = o.bucket;
    this.incompleteAgeMs = o.incompleteUploadAgeMs ?? STALE_MS;
    this.log = o.logger;
    this.journal = o.journalDir ? new UploadJournal(o.journalDir, o.logger) : null;
    if (this.journal) this.journalUploads(this.journal);
  }

  /**
   * Every multipart upload this client creates is journaled before its first part goes out (the
   * middleware returns CreateMultipartUpload's answer only then) and forgotten when it completes
   * or is aborted; lib-storage's uploads included.
   */
  private journalUploads(journal: UploadJournal): void {
    this.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: string; UploadId?: string };
        let result: Awaited<ReturnType<typeof next>>;
        try {
          result = await next(args);
        } catch (err) {
          // Gone already (completed, or aborted by a sweeper): nothing left to remember.
          if (context.commandName === 'AbortMultipartUploadCommand' && status(err) === 404 && input.UploadId)
            await journal.end(input.UploadId);
          throw err;
        }
        const made = (result.output as { UploadId?: string }).UploadId;
        if (context.commandName === 'CreateMultipartUploadCommand' && made && input.Key)
          await journal.begin({ key: input.Key, uploadId: made });
        else if (
          (context.commandName === 'CompleteMultipartUploadCommand' ||
            context.commandName === 'AbortMultipartUploadCommand') &&
          input.UploadId
        )
          await journal.end(input.UploadId);
        return result;
      },
      { step: 'initialize', name: 'devutilUploadJournal' },
    );
  }

  /** What crashed writers left, removed at start-up; best effort (the bucket may be down). */
  async init(): Promise<{ removed: number; aborted: number }> {
    const own = await this.abortOwnOrphans();
    const swept = await this.sweepAbandoned();
    return { removed: swept.removed, aborted: own + swept.aborted };
  }

  /**
   * Aborts the multipart uploads this node's journal names for processes that are gone: a process
   * killed mid-upload, at its next start, whatever the uploads' age. An upload the store no longer
   * knows (it completed before the kill) is simply forgotten; one the store could not abort now
   * stays journaled for the next start (and the sweep).
   */
  private async abortOwnOrphans(): Promise<number> {
    if (!this.journal) return 0;
    let aborted = 0;
    let failed = 0;
    for await (const { entry, file } of this.journal.orphans()) {
      try {
        await this.client.send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: entry.key, UploadId: entry.uploadId }),
        );
        aborted++;
      } catch (err) {
        if (status(err) !== 404) {
          if (!failed++)
            this.log?.warn({ err }, 'an orphaned s3 multipart upload was not aborted; next start retries');
          continue;
        }
      }
      await this.journal.drop(file);
    }
    if (aborted)
      this.log?.info({ aborted }, 'multipart uploads a killed process of this node left aborted at start-up');
    return aborted;
  }

  /**
   * Removes staging objects and aborts incomplete multipart uploads that crashed writers left under
   * devutil's namespaces, each only past its safe age. Never throws: an unreachable bucket is
   * readiness's business, and a failure is logged once.
   */
  async sweepAbandoned(): Promise<{ removed: number; aborted: number }> {
    let removed = 0;
    let aborted = 0;
    try {
      for await (const e of this.list(STAGING)) {
        if (Date.now() - e.lastModified.getTime() < STALE_MS) continue;
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: e.key }));
        removed++;
      }
      if (this.multipartListing) {
        const r = await abortIncompleteUploads({
          client: this.client,
          bucket: this.bucket,
          prefixes: [STAGING, ...BLOB_NAMESPACES],
          olderThanMs: this.incompleteAgeMs,
        });
        aborted = r.aborted;
        if (r.aborted || r.young)
          this.log?.info(
            { aborted: r.aborted, inFlight: r.young, olderThanSec: Math.round(this.incompleteAgeMs / 1000) },
            'incomplete s3 multipart uploads swept',
          );
      }
      this.sweepFailing = false;
    } catch (err) {
      if (err instanceof MultipartListingUnsupported) {
        this.multipartListing = false;
        this.log?.info(
          'the s3 store has no ListMultipartUploads: incomplete uploads are not aborted by devutil (use a bucket lifecycle rule)',
        );
      } else {
        this.log?.[this.sweepFailing ? 'debug' : 'warn']({ err }, 's3 cleanup of abandoned uploads failed');
        this.sweepFailing = true;
      }
    }
    return { removed, aborted };
  }

  private check(key: string): string {
    if (!BLOB_KEY.test(key)) throw new Error(`invalid blob key: ${JSON.stringify(key.slice(0, 80))}`);
    return key;
  }

  private async upload(key: string, body: Readable, meta: Record<string, string>, signal?: AbortSignal) {
    const abortController = new AbortController();
    const onAbort = () => abortController.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let size = 0;
    // Counting in a Transform (not a 'data' listener, which would switch the body to flowing mode).
    const counted = pipeline(
      body,
      new Transform({
        transform(c: Buffer, _e, cb) {
          size += c.length;
          cb(null, c);
        },
      }),
      () => {},
    );
    const up = new Upload({
      client: this.client,
      // 8 MiB parts, two in flight: memory stays bounded whatever the object size.
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false,
      abortController,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: counted,
        Metadata: Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, enc(v)])),
      },
    });
    try {
      await up.done();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    signal?.throwIfAborted();
    return size;
  }

  async put(key: string, body: Readable, meta: BlobInfo['meta'], opts: PutOptions = {}): Promise<BlobInfo> {
    this.check(key);
    checkMeta(meta);
    if (!opts.finalize && !opts.ifAbsent) {
      const size = await this.upload(key, body, meta, opts.signal);
      return { key, size, meta, lastModified: new Date() };
    }
    const staging = `${STAGING}${randomUUID()}`;
    try {
      const size = await this.upload(staging, body, meta, opts.signal);
      const extra = opts.finalize ? await opts.finalize() : {};
      checkMeta(extra);
      const all = { ...meta, ...extra };
      opts.signal?.throwIfAborted();
      const copy = (ifNoneMatch: boolean) =>
        this.client.send(
          new CopyObjectCommand({
            Bucket: this.bucket,
            Key: key,
            CopySource: `${this.bucket}/${staging.split('/').map(encodeURIComponent).join('/')}`,
            MetadataDirective: 'REPLACE',
            Metadata: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, enc(v)])),
            ...(ifNoneMatch ? { IfNoneMatch: '*' } : {}),
          }),
        );
      if (opts.ifAbsent) {
        await this.locks.run(key, async () => {
          // The HEAD covers servers that ignore If-None-Match; the condition covers other instances.
          if (await this.head(key)) throw new BlobExistsError(key);
          try {
            await copy(true);
          } catch (err) {
            if (status(err) === 412) throw new BlobExistsError(key);
            if (status(err) === 501) await copy(false);
            else throw err;
          }
        });
      } else {
        await copy(false);
      }
      return { key, size, meta: all, lastModified: new Date() };
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: staging })).catch(() => {});
    }
  }

  async get(
    key: string,
    range?: { start: number; end: number },
  ): Promise<{ info: BlobInfo; body: Readable } | null> {
    this.check(key);
    try {
      const r = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      const total = /\/(\d+)$/.exec(r.ContentRange ?? '')?.[1];
      const size = total !== undefined ? Number(total) : (r.ContentLength ?? 0);
      return { info: toInfo(key, size, r.Metadata, r.LastModified), body: r.Body as Readable };
    } catch (err) {
      if (status(err) === 404) return null;
      throw err;
    }
  }

  async head(key: string): Promise<BlobInfo | null> {
    this.check(key);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return toInfo(key, r.ContentLength ?? 0, r.Metadata, r.LastModified);
    } catch (err) {
      if (status(err) === 404) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<boolean> {
    // DeleteObject succeeds for absent keys too; the HEAD tells whether something was there.
    const existed = (await this.head(key)) !== null;
    if (existed) await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    return existed;
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  async *list(prefix: string): AsyncIterable<BlobEntry> {
    let token: string | undefined;
    do {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const o of r.Contents ?? []) {
        if (o.Key && !(prefix !== STAGING && o.Key.startsWith(STAGING)))
          yield { key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0) };
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * A GET URL signed for `expiresSec` (query-string SigV4, only the host header signed: the
   * holder may add Range). The response-* overrides are signed too, so they cannot be altered.
   */
  async presign(key: string, o: PresignOptions): Promise<string> {
    this.check(key);
    const cmd = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ...(o.contentType ? { ResponseContentType: o.contentType } : {}),
      ...(o.contentDisposition ? { ResponseContentDisposition: o.contentDisposition } : {}),
      ...(o.contentEncoding ? { ResponseContentEncoding: o.contentEncoding } : {}),
      ...(o.cacheControl ? { ResponseCacheControl: o.cacheControl } : {}),
    });
    return getSignedUrl(this.client, cmd, { expiresIn: o.expiresSec });
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

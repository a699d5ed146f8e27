// Incomplete multipart uploads a killed writer left behind: S3 keeps their parts (and bills them)
// until someone aborts them, and a listing of objects never shows them. This lists them under the
// given prefixes only (a bucket may be shared) and aborts those initiated longer ago than the safe
// age: a younger one may be another node's upload in flight (rolling restarts, several instances).
import {
  AbortMultipartUploadCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';

export interface AbortIncompleteOptions {
  client: S3Client;
  bucket: string;
  /** Key prefixes this service owns ("files/"); nothing outside them is listed or aborted. */
  prefixes: readonly string[];
  /** Only uploads initiated at least this long ago (by the store's clock) are aborted. */
  olderThanMs: number;
  now?: () => number;
  /** Uploads per listing page (S3's maximum and default: 1000). */
  pageSize?: number;
}

export interface AbortIncompleteResult {
  aborted: number;
  /** Incomplete uploads under the prefixes left alone because they are younger than the safe age. */
  young: number;
}

/** The store answered that it has no ListMultipartUploads (s3rver: 501 NotImplemented). */
export class MultipartListingUnsupported extends Error {
  constructor(cause: unknown) {
    super('the S3 store does not implement ListMultipartUploads', { cause });
    this.name = 'MultipartListingUnsupported';
  }
}

function statusOf(err: unknown): number | undefined {
  // The store's middleware wraps 5xx answers: the S3 error is the cause.
  for (let e = err, i = 0; e && i < 3; e = (e as { cause?: unknown }).cause, i++) {
    const s = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (s !== undefined) return s;
  }
  return undefined;
}

function nameOf(err: unknown): string | undefined {
  for (let e = err, i = 0; e && i < 3; e = (e as { cause?: unknown }).cause, i++) {
    const n = (e as { Code?: string; name?: string }).Code ?? (e as { name?: string }).name;
    if (n && n !== 'Error' && n !== 'BlobUnavailableError') return n;
  }
  return undefined;
}

export async function abortIncompleteUploads(o: AbortIncompleteOptions): Promise<AbortIncompleteResult> {
  const now = o.now ?? Date.now;
  const out: AbortIncompleteResult = { aborted: 0, young: 0 };
  for (const prefix of o.prefixes) {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      let page: ListMultipartUploadsCommandOutput;
      try {
        page = await o.client.send(
          new ListMultipartUploadsCommand({
            Bucket: o.bucket,
            Prefix: prefix,
            MaxUploads: o.pageSize,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
      } catch (err) {
        if (statusOf(err) === 501 || nameOf(err) === 'NotImplemented')
          throw new MultipartListingUnsupported(err);
        throw err;
      }
      // The prefix is checked here too: a store that ignored it must not make us abort others' uploads.
      for (const u of page.Uploads ?? []) {
        if (!u.Key?.startsWith(prefix) || !u.UploadId) continue;
        const started = u.Initiated?.getTime();
        if (started === undefined || Number.isNaN(started)) continue;
        if (now() - started < o.olderThanMs) {
          out.young++;
          continue;
        }
        try {
          await o.client.send(
            new AbortMultipartUploadCommand({ Bucket: o.bucket, Key: u.Key, UploadId: u.UploadId }),
          );
          out.aborted++;
        } catch (err) {
          // Another node's sweeper got there first.
          if (statusOf(err) !== 404) throw err;
        }
      }
      if (!page.IsTruncated) break;
      // Both markers advance together; a truncated page without them would list the same page again.
      if (!page.NextKeyMarker && !page.NextUploadIdMarker) break;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }
  return out;
}

// Resumable uploads kept on the shared blob store, so any instance can answer for any upload:
//   uploads/<id>/info           JSON: length, target key, name, type, metadata, limits
//   uploads/<id>/part-<offset>  the bytes one PATCH delivered (a cut PATCH keeps what arrived)
//   uploads/<id>/result         JSON: the 2.1 upload result, once the file is stored
// The offset is the sum of the contiguous parts from 0; callers serialise writes with a lock.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { SpaceQuota } from '../../../infra/limits/quota.ts';
import type { BlobStore } from '../../../infra/storage/blob-store.ts';
import type { Limits } from '../lifetime.ts';

const NS = 'uploads/';
const PART = 'part-';
/** An info or result blob is small; anything larger is not ours. */
const MAX_JSON = 64 * 1024;

export interface UploadInfo {
  length: number;
  key: string;
  filename: string;
  filetype: string | undefined;
  /** The Upload-Metadata header as the client sent it (echoed on HEAD). */
  metadata: string;
  limits: Limits;
}

export interface Part {
  blob: string;
  offset: number;
  size: number;
}

export interface UploadState {
  id: string;
  info: UploadInfo;
  parts: Part[];
  /** Bytes received so far (contiguous from 0). */
  offset: number;
  /** Epoch ms of the last write (creation, a part, completion): expiry counts from here. */
  lastWrite: number;
  /** The 2.1 JSON once complete, else null. */
  result: unknown;
}

async function readJson(blobs: BlobStore, key: string): Promise<unknown> {
  const got = await blobs.get(key);
  if (!got) return null;
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of got.body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_JSON) {
      got.body.destroy();
      throw new Error(`upload record too large: ${key}`);
    }
    chunks.push(c);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const json = (v: unknown) => Readable.from([Buffer.from(JSON.stringify(v))]);

export class UploadStore {
  private readonly blobs: BlobStore;
  /** Parts count against the files quota from their PATCH until the upload completes or goes. */
  quota: SpaceQuota | null = null;
  constructor(blobs: BlobStore) {
    this.blobs = blobs;
  }

  /** Every part of an unfinished upload and its size (the quota's full count). */
  async *listParts(): AsyncGenerator<[string, number]> {
    for await (const e of this.blobs.list(NS)) if (e.key.includes(`/${PART}`)) yield [e.key, e.size];
  }

  /** Deletes a part and counts its key again. */
  private async deletePart(blob: string): Promise<void> {
    if (await this.blobs.delete(blob)) await this.quota?.settle(blob);
  }

  async create(info: UploadInfo): Promise<string> {
    const id = randomBytes(16).toString('hex');
    await this.blobs.put(`${NS}${id}/info`, json(info), {});
    return id;
  }

  /** Everything known about upload `id`, or null when there is no such upload. */
  async state(id: string): Promise<UploadState | null> {
    const entries = [];
    for await (const e of this.blobs.list(`${NS}${id}/`)) entries.push(e);
    if (!entries.some((e) => e.key.endsWith('/info'))) return null;
    const info = (await readJson(this.blobs, `${NS}${id}/info`)) as UploadInfo | null;
    if (!info) return null;
    const hasResult = entries.some((e) => e.key.endsWith('/result'));
    const result = hasResult ? await readJson(this.blobs, `${NS}${id}/result`) : null;
    // Listings of the disk backend count the metadata trailer: the exact size comes from head().
    const partEntries = entries.filter((e) => e.key.slice(e.key.lastIndexOf('/') + 1).startsWith(PART));
    const heads = await Promise.all(partEntries.map((e) => this.blobs.head(e.key)));
    const parts: Part[] = [];
    for (const h of heads)
      if (h)
        parts.push({
          blob: h.key,
          offset: Number(h.key.slice(h.key.lastIndexOf(PART) + PART.length)),
          size: h.size,
        });
    parts.sort((a, b) => a.offset - b.offset);
    let offset = 0;
    const chain: Part[] = [];
    for (const p of parts) {
      if (p.offset !== offset) break;
      chain.push(p);
      offset += p.size;
    }
    const lastWrite = Math.max(...entries.map((e) => e.lastModified.getTime()));
    return { id, info, parts: chain, offset, lastWrite, result };
  }

  /** Stores the bytes of one PATCH at `offset`: the part, or null when no byte arrived. */
  async writePart(
    id: string,
    offset: number,
    body: AsyncIterable<Buffer>,
    signal: AbortSignal,
  ): Promise<Part | null> {
    const blob = `${NS}${id}/${PART}${String(offset).padStart(15, '0')}`;
    const stored = await this.blobs.put(blob, Readable.from(body), {}, { signal });
    if (stored.size > 0) return { blob, offset, size: stored.size };
    await this.blobs.delete(blob);
    return null;
  }

  /** Drops one part (a final PATCH whose file could not be stored goes back to the offset before it). */
  async dropPart(p: Part): Promise<void> {
    await this.deletePart(p.blob);
  }

  /** The whole upload's bytes, part after part. */
  open(parts: readonly Part[]): Readable {
    const blobs = this.blobs;
    return Readable.from(
      (async function* () {
        for (const p of parts) {
          const got = await blobs.get(p.blob);
          if (!got) throw new Error(`upload part vanished: ${p.blob}`);
          yield* got.body as AsyncIterable<Buffer>;
        }
      })(),
    );
  }

  /** Records the result and frees the parts. */
  async complete(s: UploadState, result: unknown): Promise<void> {
    await this.blobs.put(`${NS}${s.id}/result`, json(result), {});
    for (const p of s.parts) await this.deletePart(p.blob);
  }

  /** Deletes every blob of upload `id` and gives its parts' space back to the quota. */
  async remove(id: string): Promise<void> {
    const keys = [];
    for await (const e of this.blobs.list(`${NS}${id}/`)) keys.push(e.key);
    for (const k of keys) {
      if (k.includes(`/${PART}`)) await this.deletePart(k);
      else await this.blobs.delete(k);
    }
  }

  /** Removes every upload whose last write is older than `ttlMs`; returns how many. */
  async sweep(now: number, ttlMs: number): Promise<number> {
    const newest = new Map<string, number>();
    for await (const e of this.blobs.list(NS)) {
      const id = e.key.slice(NS.length).split('/')[0] ?? '';
      newest.set(id, Math.max(newest.get(id) ?? 0, e.lastModified.getTime()));
    }
    let n = 0;
    for (const [id, t] of newest) {
      if (now - t <= ttlMs) continue;
      await this.remove(id);
      n++;
    }
    return n;
  }
}

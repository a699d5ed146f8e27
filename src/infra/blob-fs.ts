// Local-disk blob store: one file per blob (bytes, then a JSON metadata trailer), written to a
// temporary file, fsynced and renamed (or hard-linked for create-only) so bytes and metadata
// appear together or not at all, and a crash leaves only temporary files that init() removes.
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, type FileHandle, link, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  BLOB_KEY,
  type BlobEntry,
  BlobExistsError,
  type BlobInfo,
  type BlobStore,
  checkMeta,
  type PutOptions,
} from './blob-store.ts';
import { isErr, readTrailer, sweepTemp, trailerBytes } from './trailer-file.ts';

const MAGIC = Buffer.from('DUB1');
/** Temporary files of a live writer are only removed when this old (a wedged writer). */
const STALE_MS = 24 * 3600 * 1000;

interface Trailer {
  meta: Record<string, string>;
  mtime: string;
}

export class BlobKeyError extends Error {
  constructor(key: string) {
    super(`invalid blob key: ${JSON.stringify(key.slice(0, 80))}`);
    this.name = 'BlobKeyError';
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  readonly tmpDir: string;

  readonly root: string;
  constructor(root: string) {
    this.root = root;
    this.tmpDir = join(root, '.tmp');
  }

  /** Creates the directories and removes temporary files left by dead writers (crash, kill -9). */
  async init(): Promise<{ removed: number }> {
    await mkdir(this.tmpDir, { recursive: true });
    return { removed: await sweepTemp(this.tmpDir, STALE_MS) };
  }

  private path(key: string): string {
    if (!BLOB_KEY.test(key)) throw new BlobKeyError(key);
    return join(this.root, ...key.split('/'));
  }

  async put(
    key: string,
    body: Readable,
    meta: Record<string, string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const final = this.path(key);
    checkMeta(meta);
    const tmp = join(this.tmpDir, `${process.pid}-${randomUUID()}`);
    const fh = await open(tmp, 'wx', 0o644);
    let closed = false;
    try {
      let size = 0;
      await pipeline(
        body,
        async (source: AsyncIterable<Buffer>) => {
          for await (const chunk of source) {
            await fh.write(chunk);
            size += chunk.length;
          }
        },
        ...(opts.signal ? [{ signal: opts.signal }] : []),
      );
      const extra = opts.finalize ? await opts.finalize() : {};
      opts.signal?.throwIfAborted();
      checkMeta(extra);
      const trailer: Trailer = { meta: { ...meta, ...extra }, mtime: new Date().toISOString() };
      await fh.write(trailerBytes(MAGIC, trailer));
      await fh.sync();
      await fh.close();
      closed = true;
      await mkdir(dirname(final), { recursive: true });
      if (opts.ifAbsent) {
        // link(2) fails with EEXIST when the name exists: an atomic create-only publish.
        try {
          await link(tmp, final);
        } catch (err) {
          if (isErr(err, 'EEXIST')) throw new BlobExistsError(key);
          throw err;
        }
        await unlink(tmp);
      } else {
        await rename(tmp, final);
      }
      await fsyncDir(dirname(final));
      return { key, size, meta: trailer.meta, lastModified: new Date(trailer.mtime) };
    } finally {
      if (!closed) await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
    }
  }

  private async readInfo(key: string, fh: FileHandle): Promise<BlobInfo> {
    const found = await readTrailer(fh, MAGIC);
    if (!found) throw new Error(`corrupt blob ${key}`);
    const t = found.value as Trailer;
    return { key, size: found.bodySize, meta: t.meta, lastModified: new Date(t.mtime) };
  }

  private async openBlob(key: string): Promise<FileHandle | null> {
    try {
      return await open(this.path(key), 'r');
    } catch (err) {
      if (isErr(err, 'ENOENT') || isErr(err, 'ENOTDIR') || isErr(err, 'EISDIR')) return null;
      throw err;
    }
  }

  async get(
    key: string,
    range?: { start: number; end: number },
  ): Promise<{ info: BlobInfo; body: Readable } | null> {
    const fh = await this.openBlob(key);
    if (!fh) return null;
    try {
      const info = await this.readInfo(key, fh);
      const start = range?.start ?? 0;
      const end = Math.min(range?.end ?? info.size - 1, info.size - 1);
      // The open handle keeps reading the version it opened even if a replace renames over it.
      if (end < start) {
        await fh.close();
        return { info, body: Readable.from([]) };
      }
      const body = fh.createReadStream({ start, end, highWaterMark: 512 * 1024 });
      return { info, body };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  async head(key: string): Promise<BlobInfo | null> {
    const fh = await this.openBlob(key);
    if (!fh) return null;
    try {
      return await this.readInfo(key, fh);
    } finally {
      await fh.close();
    }
  }

  async delete(key: string): Promise<boolean> {
    try {
      await unlink(this.path(key));
      return true;
    } catch (err) {
      if (isErr(err, 'ENOENT') || isErr(err, 'ENOTDIR')) return false;
      throw err;
    }
  }

  async ping(): Promise<void> {
    await access(this.tmpDir, constants.W_OK);
  }

  async *list(prefix: string): AsyncIterable<BlobEntry> {
    const walk = async function* (dir: string, rel: string): AsyncGenerator<BlobEntry> {
      const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const d of names) {
        if (d.name.startsWith('.')) continue;
        const key = rel ? `${rel}/${d.name}` : d.name;
        if (d.isDirectory()) {
          if (prefix.startsWith(`${key}/`) || key.startsWith(prefix) || `${key}/`.startsWith(prefix))
            yield* walk(join(dir, d.name), key);
        } else if (d.isFile() && key.startsWith(prefix)) {
          const st = await stat(join(dir, d.name)).catch(() => null);
          if (st) yield { key, size: st.size, lastModified: st.mtime };
        }
      }
    };
    yield* walk(this.root, '');
  }

  async close(): Promise<void> {}
}

// Local-disk blob store. A blob is an immutable body file <root>/.data/<ab>/<id> (only the bytes,
// so nginx can send it with sendfile: X-Accel-Redirect) and a small JSON record under the key that
// names it and carries the metadata. Both are written to temporary files and fsynced; publishing
// the record (link(2) for create-only, rename(2) otherwise) makes bytes and metadata appear
// together or not at all, and a crash leaves only temporaries and unreferenced bodies that
// init()/sweepOrphans() remove. Records of earlier versions (bytes, then a JSON trailer) are read.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import {
  access,
  type FileHandle,
  link,
  mkdir,
  open,
  readdir,
  rename,
  rmdir,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { KeyedMutex } from '../limits/keyed-mutex.ts';
import {
  BLOB_KEY,
  type BlobEntry,
  BlobExistsError,
  type BlobInfo,
  type BlobStore,
  checkMeta,
  type PutOptions,
} from './blob-store.ts';
import { FileRangeStream } from './file-read.ts';
import { isErr, readTrailer, sweepTemp } from './trailer-file.ts';

/** Blobs of earlier versions: bytes, then a JSON trailer (trailer-file.ts) with this magic. */
const LEGACY_MAGIC = Buffer.from('DUB1');
const MAX_RECORD = 64 * 1024;
/** Temporary files of a live writer are only removed when this old (a wedged writer). */
const STALE_MS = 24 * 3600 * 1000;
/** An unreferenced body younger than this may belong to a put between its two renames. */
const ORPHAN_MS = 3600 * 1000;
const BODY_ID = /^[0-9a-f]{32}$/;

/** The record published under a key. */
interface Record2 {
  v: 2;
  /** Body file id: the body is <root>/.data/<id[0:2]>/<id>. */
  body: string;
  size: number;
  mtime: string;
  meta: Record<string, string>;
}

/** What a key holds: a record naming a body file, or (earlier versions) the bytes themselves. */
type Found =
  | { kind: 'record'; info: BlobInfo; body: string }
  | { kind: 'legacy'; info: BlobInfo; fh: FileHandle };

export class BlobKeyError extends Error {
  constructor(key: string) {
    super(`invalid blob key: ${JSON.stringify(key.slice(0, 80))}`);
    this.name = 'BlobKeyError';
  }
}

const isAnyErr = (err: unknown, ...codes: string[]) => codes.some((c) => isErr(err, c));

/**
 * mkdir -p of a key's directory while a delete may prune the same parents (uploads/ after its last
 * upload): a parent removed between two of its steps fails it with ENOENT, so it is tried again.
 */
async function mkdirInPruned(dir: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await mkdir(dir, { recursive: true });
      return;
    } catch (err) {
      if (attempt >= 5 || !isErr(err, 'ENOENT')) throw err;
    }
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

async function writeDurable(path: string, data: Buffer): Promise<void> {
  const fh = await open(path, 'wx', 0o644);
  try {
    await writeFile(fh, data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  readonly tmpDir: string;
  /** Body files; what an nginx internal location aliases for X-Accel-Redirect. */
  readonly dataDir: string;

  readonly root: string;
  private orphans: Promise<number> = Promise.resolve(0);
  /** Serialises publishing per key in this process, so a replacement knows the body it replaced. */
  private readonly publishing = new KeyedMutex();
  constructor(root: string) {
    this.root = root;
    this.tmpDir = join(root, '.tmp');
    this.dataDir = join(root, '.data');
  }

  /** Creates the directories and removes temporary files left by dead writers (crash, kill -9). */
  async init(): Promise<{ removed: number }> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(this.dataDir, { recursive: true });
    const removed = await sweepTemp(this.tmpDir, STALE_MS);
    // In the background: it reads every record, and nothing waits for it.
    this.orphans = this.sweepOrphans().catch(() => 0);
    return { removed };
  }

  /**
   * Removes body files no record names (a crash between a put's two renames, or two concurrent
   * replacements of one key) once they are older than an hour. Reads every record: run it rarely.
   */
  async sweepOrphans(now = Date.now()): Promise<number> {
    const live = new Set<string>();
    for await (const f of this.records(this.root, '')) if (f.kind === 'record') live.add(f.body);
    let removed = 0;
    for (const shard of await readdir(this.dataDir).catch(() => [])) {
      for (const id of await readdir(join(this.dataDir, shard)).catch(() => [])) {
        if (live.has(id)) continue;
        const path = join(this.dataDir, shard, id);
        const st = await stat(path).catch(() => null);
        if (!st || now - st.mtimeMs < ORPHAN_MS) continue;
        await unlink(path).catch(() => {});
        removed++;
      }
    }
    return removed;
  }

  private path(key: string): string {
    if (!BLOB_KEY.test(key)) throw new BlobKeyError(key);
    return join(this.root, ...key.split('/'));
  }

  /** The body file of a record, relative to dataDir ("ab/abcd..."). */
  static bodyFile(id: string): string {
    return `${id.slice(0, 2)}/${id}`;
  }

  private bodyPath(id: string): string {
    return join(this.dataDir, id.slice(0, 2), id);
  }

  async put(
    key: string,
    body: Readable,
    meta: Record<string, string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const final = this.path(key);
    checkMeta(meta);
    const id = randomBytes(16).toString('hex');
    const tmp = join(this.tmpDir, `${process.pid}-${id}`);
    const bodyPath = this.bodyPath(id);
    let placed = false;
    let published = false;
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
      const rec: Record2 = {
        v: 2,
        body: id,
        size,
        mtime: new Date().toISOString(),
        meta: { ...meta, ...extra },
      };
      const json = Buffer.from(JSON.stringify(rec));
      if (json.length > MAX_RECORD) throw new Error('blob metadata too large');
      await fh.sync();
      await fh.close();
      closed = true;
      // The body first (nobody names it yet), durable before any record points at it.
      await mkdir(dirname(bodyPath), { recursive: true });
      await rename(tmp, bodyPath);
      placed = true;
      await fsyncDir(dirname(bodyPath));
      const recTmp = join(this.tmpDir, `${process.pid}-${id}.rec`);
      await writeDurable(recTmp, json);
      await mkdirInPruned(dirname(final));
      let previous: string | null = null;
      try {
        await this.publishing.run(final, async () => {
          if (opts.ifAbsent) {
            // link(2) fails with EEXIST when the name exists: an atomic create-only publish.
            try {
              await this.inDir(final, () => link(recTmp, final));
            } catch (err) {
              if (isErr(err, 'EEXIST')) throw new BlobExistsError(key);
              throw err;
            }
          } else {
            // Another process replacing the same key at the same time can still leave an orphan body
            // behind (sweepOrphans); never a record without its body.
            previous = await this.bodyOf(final);
            await this.inDir(final, () => rename(recTmp, final));
          }
          published = true;
        });
      } finally {
        await unlink(recTmp).catch(() => {});
      }
      await fsyncDir(dirname(final));
      // The replaced version's body: readers holding it open keep reading it, new ones see ours.
      if (previous && previous !== id) await unlink(this.bodyPath(previous)).catch(() => {});
      return {
        key,
        size,
        meta: rec.meta,
        lastModified: new Date(rec.mtime),
        bodyFile: FsBlobStore.bodyFile(id),
      };
    } finally {
      if (!closed) await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      if (placed && !published) await unlink(bodyPath).catch(() => {});
    }
  }

  /**
   * Runs `op`, which creates `path`; when a delete pruned its directory since mkdir (the last blob
   * of a namespace went away meanwhile), makes the directory again and retries.
   */
  private async inDir(path: string, op: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await op();
      } catch (err) {
        if (attempt >= 5 || !isErr(err, 'ENOENT')) throw err;
        await mkdirInPruned(dirname(path));
      }
    }
  }

  /**
   * Removes the directories a delete left empty, from the key's own up to the root (an ended
   * upload's uploads/<id>/): keys come and go, their directories must not pile up. One still in
   * use is not empty (ENOTEMPTY) and stops the walk.
   */
  private async prune(dir: string): Promise<void> {
    for (
      let d = dir;
      d.startsWith(`${this.root}/`) && !d.slice(this.root.length + 1).startsWith('.');
      d = dirname(d)
    ) {
      try {
        await rmdir(d);
      } catch {
        return;
      }
    }
  }

  /** The body id of the record under `path`, if it is a current-format record. */
  private async bodyOf(path: string): Promise<string | null> {
    const f = await this.find(path, 'head').catch(() => null);
    return f?.kind === 'record' ? f.body : null;
  }

  /**
   * Reads what `path` holds. For a legacy blob the handle stays open when `want` is 'get' (the
   * caller streams from it), else it is closed.
   */
  private async find(path: string, want: 'get' | 'head', key = ''): Promise<Found | null> {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      if (isAnyErr(err, 'ENOENT', 'ENOTDIR', 'EISDIR')) return null;
      throw err;
    }
    let keep = false;
    try {
      const st = await fh.stat();
      if (!st.isFile()) return null;
      const legacy = await readTrailer(fh, LEGACY_MAGIC);
      if (legacy) {
        const t = legacy.value as { meta: Record<string, string>; mtime: string };
        const info = { key, size: legacy.bodySize, meta: t.meta, lastModified: new Date(t.mtime) };
        keep = want === 'get';
        return { kind: 'legacy', info, fh };
      }
      if (st.size > MAX_RECORD) throw new Error(`corrupt blob ${key}`);
      const buf = Buffer.alloc(st.size);
      await fh.read(buf, 0, st.size, 0);
      const r = JSON.parse(buf.toString('utf8')) as Partial<Record2>;
      if (r.v !== 2 || !BODY_ID.test(r.body ?? '') || typeof r.size !== 'number' || !r.meta || !r.mtime)
        throw new Error(`corrupt blob ${key}`);
      const info: BlobInfo = {
        key,
        size: r.size,
        meta: r.meta,
        lastModified: new Date(r.mtime),
        bodyFile: FsBlobStore.bodyFile(r.body as string),
      };
      return { kind: 'record', info, body: r.body as string };
    } finally {
      if (!keep) await fh.close();
    }
  }

  async get(
    key: string,
    range?: { start: number; end: number },
  ): Promise<{ info: BlobInfo; body: Readable } | null> {
    const path = this.path(key);
    // A replacement between reading the record and opening its body removes that body: read again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const found = await this.find(path, 'get', key);
      if (!found) return null;
      let fh: FileHandle;
      if (found.kind === 'legacy') fh = found.fh;
      else {
        try {
          fh = await open(this.bodyPath(found.body), 'r');
        } catch (err) {
          if (isErr(err, 'ENOENT')) continue;
          throw err;
        }
      }
      const { info } = found;
      const start = range?.start ?? 0;
      const end = Math.min(range?.end ?? info.size - 1, info.size - 1);
      // The open handle keeps reading the version it opened even if a replace removes it.
      if (end < start) {
        await fh.close();
        return { info, body: Readable.from([]) };
      }
      return { info, body: new FileRangeStream(fh, start, end) };
    }
    throw new Error(`blob ${key} names a body that does not exist`);
  }

  async head(key: string): Promise<BlobInfo | null> {
    const found = await this.find(this.path(key), 'head', key);
    return found?.info ?? null;
  }

  async delete(key: string): Promise<boolean> {
    const path = this.path(key);
    // Take the record out of its name first (atomically, whatever version is current), then
    // remove the body it names: no reader finds a record whose body is gone for good.
    const trash = join(this.tmpDir, `${process.pid}-${randomBytes(16).toString('hex')}.del`);
    try {
      // Only a file: a key that names a directory of other keys (a namespace) is not a blob.
      if (!(await stat(path)).isFile()) return false;
      await rename(path, trash);
    } catch (err) {
      if (isAnyErr(err, 'ENOENT', 'ENOTDIR')) return false;
      throw err;
    }
    try {
      const body = await this.bodyOf(trash);
      if (body) await unlink(this.bodyPath(body)).catch(() => {});
    } finally {
      await unlink(trash).catch(() => {});
    }
    await this.prune(dirname(path));
    return true;
  }

  async ping(): Promise<void> {
    await access(this.tmpDir, constants.W_OK);
  }

  /** Every published record under `dir` (hidden names skipped: .tmp, .data), with its key. */
  private async *records(dir: string, rel: string, prefix = ''): AsyncGenerator<Found> {
    const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of names) {
      if (d.name.startsWith('.')) continue;
      const key = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        if (prefix.startsWith(`${key}/`) || key.startsWith(prefix) || `${key}/`.startsWith(prefix))
          yield* this.records(join(dir, d.name), key, prefix);
      } else if (d.isFile() && key.startsWith(prefix)) {
        const f = await this.find(join(dir, d.name), 'head', key).catch(() => null);
        if (f) yield f;
      }
    }
  }

  async *list(prefix: string): AsyncIterable<BlobEntry> {
    for await (const f of this.records(this.root, '', prefix))
      yield { key: f.info.key, size: f.info.size, lastModified: f.info.lastModified };
  }

  async close(): Promise<void> {
    await this.orphans;
  }
}

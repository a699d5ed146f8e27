// The disk tier of infra/cache.ts: one file per entry (cache-file.ts), an in-memory LRU index
// bounded by bytes, temporary file + rename so no partial entry is ever visible, and an
// asynchronous scan that adopts the files of earlier runs (and of sibling cluster workers).
import { createHash, randomUUID } from 'node:crypto';
import { constants, renameSync } from 'node:fs';
import { appendFile, copyFile, mkdir, open, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  type CacheEntry,
  decodeFile,
  fileName,
  listFiles,
  readEntry,
  same,
  trailerOf,
} from './cache-file.ts';
import { CacheWriter } from './cache-writer.ts';
import { isErr, sweepTemp } from './trailer-file.ts';

/** Temporary files of a live process are left alone unless this old (a wedged writer). */
const STALE_TMP_MS = 24 * 3600 * 1000;

interface Slot<M> {
  /** File bytes counted against the budget. */
  bytes: number;
  /** Loaded on first use after a scan. */
  entry: CacheEntry<M> | null;
}

type Made<M> = { entry: CacheEntry<M>; bytes: number } | null;

export class DiskTier<M> {
  readonly itemBytes: number;
  writes = 0;
  evictions = 0;
  private readonly dir: string;
  private readonly tmpDir: string;
  private readonly budget: number;
  private readonly onError: (err: unknown) => void;
  private readonly opened: Promise<boolean>;
  private tmpReady = false;
  /** Recency order: the first slot is the least recently used. */
  private index = new Map<string, Slot<M>>();
  private used = 0;
  /** The newest write per hash: an older write, or one a delete cancelled, is not published. */
  private claims = new Map<string, symbol>();
  private shards = new Set<string>();
  /** Hashes changed while a scan runs: the scan's older view of them is ignored. */
  private touched: Set<string> | null = null;
  private scanning: Promise<void> | null = null;
  private sinceScan = 0;

  constructor(dir: string, budget: number, itemBytes: number, onError: (err: unknown) => void) {
    this.dir = dir;
    this.tmpDir = join(dir, 'tmp');
    this.budget = budget;
    this.itemBytes = itemBytes;
    this.onError = onError;
    this.opened = mkdir(this.tmpDir, { recursive: true })
      .then(() => sweepTemp(this.tmpDir, STALE_TMP_MS))
      .then(
        () => {
          this.tmpReady = true;
          return true;
        },
        (err: unknown) => {
          onError(err);
          return false;
        },
      );
  }

  get entries(): number {
    return this.index.size;
  }

  get bytes(): number {
    return this.used;
  }

  get busy(): Promise<void> | null {
    return this.scanning;
  }

  private hash(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  private pathOf(h: string): string {
    return join(this.dir, fileName(h));
  }

  private tempName(): string {
    return join(this.tmpDir, `${process.pid}-${randomUUID()}`);
  }

  /** Whole entry: one read of the file. */
  async read(key: string): Promise<{ entry: CacheEntry<M>; body: Buffer } | undefined> {
    const h = this.hash(key);
    const seen = this.index.get(h);
    if (!seen && !this.scanning) return undefined;
    let file: Buffer;
    try {
      file = await readFile(this.pathOf(h));
    } catch (err) {
      return this.lost(h, seen, err);
    }
    const found = decodeFile<M>(key, file);
    if (!found) return this.lost(h, seen, null, true);
    this.adopt(h, seen, file.length, found.entry);
    return found;
  }

  /** Metadata only: from the index, or the file's trailer the first time after a scan. */
  async entry(key: string): Promise<CacheEntry<M> | undefined> {
    const h = this.hash(key);
    const seen = this.index.get(h);
    if (seen?.entry) {
      this.index.delete(h);
      this.index.set(h, seen);
      return seen.entry.key === key ? seen.entry : undefined;
    }
    if (!seen && !this.scanning) return undefined;
    const fh = await open(this.pathOf(h), 'r').catch((err: unknown) => this.lost(h, seen, err));
    if (!fh) return undefined;
    try {
      const entry = await readEntry<M>(fh, key);
      if (!entry) return this.lost(h, seen, null, true);
      this.adopt(h, seen, (await fh.stat()).size, entry);
      return entry;
    } catch (err) {
      return this.lost(h, seen, err);
    } finally {
      await fh.close();
    }
  }

  /** Bytes start..end of this version of an entry; the open handle keeps reading the version it opened. */
  async stream(entry: CacheEntry<M>, start: number, end: number): Promise<Readable | undefined> {
    const fh = await open(this.pathOf(this.hash(entry.key)), 'r').catch(() => null);
    if (!fh) return undefined;
    try {
      const e = await readEntry<M>(fh, entry.key);
      if (e && same(e, entry)) {
        if (end >= start) return fh.createReadStream({ start, end: Math.min(end, e.size - 1) });
        await fh.close();
        return Readable.from([]);
      }
    } catch (err) {
      this.onError(err);
    }
    await fh.close();
    return undefined;
  }

  put(entry: CacheEntry<M>, body: Buffer): Promise<boolean> {
    return this.write(this.hash(entry.key), async (tmp) => {
      const t = trailerOf(entry);
      if (body.length + t.length > this.itemBytes) return null;
      const fh = await open(tmp, 'wx');
      try {
        await fh.writev([body, t]);
      } finally {
        await fh.close();
      }
      return { entry, bytes: body.length + t.length };
    });
  }

  writer(key: string, meta: M, ttlMs: number | undefined, expectedSize: number | undefined): CacheWriter {
    const h = this.hash(key);
    const claim = Symbol(key);
    this.claims.set(h, claim);
    let entry: CacheEntry<M> | null = null;
    return new CacheWriter(
      {
        tempPath: async () => ((await this.opened) ? this.tempName() : null),
        maxBytes: this.itemBytes,
        trailer: (size) => {
          const now = Date.now();
          const expiresAt = ttlMs === undefined ? null : now + ttlMs;
          entry = { key, size, meta, storedAt: now, checkedAt: now, expiresAt };
          return trailerOf(entry);
        },
        commit: (tmp, bytes) => this.commit(h, claim, tmp, entry!, bytes),
        abandon: (err) => {
          if (err) this.onError(err);
          if (this.claims.get(h) === claim) this.claims.delete(h);
        },
      },
      expectedSize,
    );
  }

  /** Rewrites the trailer of `old` as `next` (copy, new trailer, rename); null when not on disk. */
  touch(old: CacheEntry<M>, next: CacheEntry<M>): Promise<boolean> | null {
    const h = this.hash(old.key);
    // Not on disk, or a newer body is being written (it will carry its own fresh trailer).
    if (!this.index.has(h) || this.claims.has(h)) return null;
    return this.write(h, async (tmp) => {
      await copyFile(this.pathOf(h), tmp, constants.COPYFILE_FICLONE);
      const fh = await open(tmp, 'r');
      const copied = await readEntry<M>(fh, old.key).finally(() => fh.close());
      if (!copied || !same(copied, old)) return null;
      const t2 = trailerOf(next);
      await truncate(tmp, next.size);
      await appendFile(tmp, t2);
      return { entry: next, bytes: next.size + t2.length };
    });
  }

  /** Removes an entry and cancels a write of it still in progress. */
  delete(key: string): void {
    const h = this.hash(key);
    this.claims.delete(h);
    this.touched?.add(h);
    const slot = this.index.get(h);
    if (slot) this.forget(h, slot);
    // Also when not indexed: a file of an earlier run the start-up scan has not reached yet.
    this.retire(h);
  }

  /**
   * Re-reads the directory: adopts files written by other processes (cluster workers share it) as
   * least recently used, forgets entries whose files are gone, then evicts over the budget. Runs
   * at start and again after a tenth of the budget was written.
   */
  rescan(): Promise<void> {
    this.scanning ??= this.scan()
      .catch(this.onError)
      .finally(() => {
        this.scanning = null;
        this.touched = null;
      });
    return this.scanning;
  }

  /** A file that is gone or unreadable: forgotten (removed when foreign or torn), unless it changed since. */
  private lost(h: string, seen: Slot<M> | undefined, err: unknown, foreign = false): undefined {
    if (err && !isErr(err, 'ENOENT')) this.onError(err);
    if (this.index.get(h) !== seen || this.claims.has(h)) return undefined;
    if (seen) this.forget(h, seen);
    if (foreign) this.retire(h);
    return undefined;
  }

  /** Records a file read from disk as most recently used, unless its name changed since `seen`. */
  private adopt(h: string, seen: Slot<M> | undefined, bytes: number, entry: CacheEntry<M>): void {
    const slot = this.index.get(h);
    if (slot !== seen || (!slot && (this.claims.has(h) || this.touched?.has(h)))) return;
    if (slot) this.forget(h, slot);
    this.index.set(h, { bytes, entry });
    this.used += bytes;
    this.touched?.add(h);
  }

  private forget(h: string, slot: Slot<M>): void {
    this.index.delete(h);
    this.used -= slot.bytes;
  }

  /** Writes a temporary file with `fill` (null = not storable) and publishes it. */
  private async write(h: string, fill: (tmp: string) => Promise<Made<M>>): Promise<boolean> {
    const claim = Symbol(h);
    this.claims.set(h, claim);
    const tmp = this.tempName();
    try {
      const made = (await this.opened) ? await fill(tmp) : null;
      if (made) return await this.commit(h, claim, tmp, made.entry, made.bytes);
    } catch (err) {
      this.onError(err);
    }
    if (this.claims.get(h) === claim) this.claims.delete(h);
    await rm(tmp, { force: true }).catch(() => {});
    return false;
  }

  /** Renames a finished file into place unless a newer write or a delete claimed the key since. */
  private async commit(
    h: string,
    claim: symbol,
    tmp: string,
    entry: CacheEntry<M>,
    bytes: number,
  ): Promise<boolean> {
    const shard = h.slice(0, 2);
    try {
      if (!this.shards.has(shard)) {
        await mkdir(join(this.dir, shard), { recursive: true });
        this.shards.add(shard);
      }
      if (this.claims.get(h) !== claim) {
        await rm(tmp, { force: true });
        return false;
      }
      // Synchronous, so no other change of this name can slip between the check and the rename.
      renameSync(tmp, this.pathOf(h));
    } catch (err) {
      this.onError(err);
      if (this.claims.get(h) === claim) this.claims.delete(h);
      await rm(tmp, { force: true }).catch(() => {});
      return false;
    }
    this.claims.delete(h);
    const slot = this.index.get(h);
    if (slot) this.forget(h, slot);
    this.index.set(h, { bytes, entry });
    this.used += bytes;
    this.touched?.add(h);
    this.writes++;
    this.sinceScan += bytes;
    this.evict();
    if (this.sinceScan > this.budget / 10) void this.rescan();
    return true;
  }

  /** Drops least recently used files until the tier is within its budget. */
  private evict(): void {
    for (const [h, slot] of this.index) {
      if (this.used <= this.budget) return;
      this.forget(h, slot);
      this.touched?.add(h);
      this.evictions++;
      this.retire(h);
    }
  }

  /** Takes a file out of its name at once (renamed into tmp/), deleting it in the background. */
  private retire(h: string): void {
    // Before tmp/ exists (a delete at start-up), wait for it: still ahead of any later write.
    if (!this.tmpReady) {
      void this.opened.then((ok) => ok && this.retire(h));
      return;
    }
    const trash = this.tempName();
    try {
      renameSync(this.pathOf(h), trash);
    } catch (err) {
      if (!isErr(err, 'ENOENT')) void rm(this.pathOf(h), { force: true }).catch(this.onError);
      return;
    }
    void rm(trash, { force: true }).catch(this.onError);
  }

  private async scan(): Promise<void> {
    this.touched = new Set();
    if (!(await this.opened)) return;
    this.sinceScan = 0;
    const found = await listFiles(this.dir);
    for (const h of found.keys()) this.shards.add(h.slice(0, 2));
    // Adopted files are older than anything used in this run: by modification time, first.
    const touched = this.touched;
    const next = new Map<string, Slot<M>>();
    const adopted = [...found].filter(([h]) => !this.index.has(h) && !touched.has(h));
    adopted.sort((a, b) => a[1].mtime - b[1].mtime);
    for (const [h, f] of adopted) next.set(h, { bytes: f.bytes, entry: null });
    for (const [h, slot] of this.index) {
      const f = found.get(h);
      if (touched.has(h)) next.set(h, slot);
      else if (f) next.set(h, f.bytes === slot.bytes ? slot : { bytes: f.bytes, entry: null });
    }
    this.index = next;
    this.used = 0;
    for (const slot of next.values()) this.used += slot.bytes;
    this.evict();
  }
}

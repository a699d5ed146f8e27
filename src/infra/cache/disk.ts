// The disk tier of infra/cache/cache.ts, its files: per entry an immutable body file and a small
// record (entry-file.ts), written as temporary files and renamed into place so no partial entry is
// ever visible, and an asynchronous scan of the directory that adopts the entries of earlier runs
// (and of sibling cluster workers). Which entries it holds, their recency, byte budget and write
// claims, and how a scan's view merges with this process's changes, is the index's
// (disk-index.ts); removing bodies is sweep.ts's.
import { createHash, randomUUID } from 'node:crypto';
import { renameSync } from 'node:fs';
import { type FileHandle, mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FileRangeStream } from '../storage/file-read.ts';
import { isErr, sweepTemp } from '../storage/trailer-file.ts';
import { DiskIndex, type Loaded, type Slot } from './disk-index.ts';
import {
  bodyPath,
  type CacheEntry,
  metaPath,
  newVersion,
  parseRecord,
  recordOf,
  same,
} from './entry-file.ts';
import { BodyRetirer } from './sweep.ts';
import { CacheWriter } from './writer.ts';

/** Temporary files of a live process are left alone unless this old (a wedged writer). */
const STALE_TMP_MS = 24 * 3600 * 1000;

/** Temporary files ready to publish: the body (none for a touch) and the record. */
interface Staged<M> extends Loaded<M> {
  body: string | null;
  record: string;
}

export interface DiskTierOptions {
  dir: string;
  budget: number;
  itemBytes: number;
  /** How long a replaced or evicted body file stays readable under its name (see CacheOptions). */
  retiredBodyMs: number;
  onError: (err: unknown) => void;
}

export class DiskTier<M> {
  readonly itemBytes: number;
  readonly dir: string;
  writes = 0;
  private readonly tmpDir: string;
  private readonly budget: number;
  private readonly bodies: BodyRetirer;
  private readonly onError: (err: unknown) => void;
  private readonly opened: Promise<boolean>;
  private tmpReady = false;
  private readonly index = new DiskIndex<M>();
  private shards = new Set<string>();
  private scanning: Promise<void> | null = null;
  private sinceScan = 0;

  constructor(o: DiskTierOptions) {
    this.dir = o.dir;
    this.tmpDir = join(o.dir, 'tmp');
    this.budget = o.budget;
    this.itemBytes = o.itemBytes;
    this.bodies = new BodyRetirer(o.dir, o.retiredBodyMs, () => this.tempName(), o.onError);
    this.onError = o.onError;
    this.opened = mkdir(this.tmpDir, { recursive: true })
      .then(() => sweepTemp(this.tmpDir, STALE_TMP_MS))
      .then(
        () => {
          this.tmpReady = true;
          return true;
        },
        (err: unknown) => {
          o.onError(err);
          return false;
        },
      );
  }

  get entries(): number {
    return this.index.size;
  }

  get bytes(): number {
    return this.index.bytes;
  }

  get evictions(): number {
    return this.index.evictions;
  }

  get busy(): Promise<void> | null {
    return this.scanning;
  }

  private hash(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  private path(relative: string): string {
    return join(this.dir, relative);
  }

  private tempName(): string {
    return join(this.tmpDir, `${process.pid}-${randomUUID()}`);
  }

  /** The indexed entry of `key`, or its record read from disk (first use after a scan). */
  private async load(h: string, key: string, seen: Slot<M> | undefined): Promise<Loaded<M> | undefined> {
    if (seen?.entry) {
      return seen.entry.key === key
        ? { entry: seen.entry, version: seen.version, bytes: seen.bytes }
        : undefined;
    }
    if (!seen && !this.scanning) return undefined;
    let file: Buffer;
    try {
      file = await readFile(this.path(metaPath(h)));
    } catch (err) {
      return this.lost(h, seen, err);
    }
    const r = parseRecord<M>(key, file);
    if (!r) return this.lost(h, seen, null, true);
    return { ...r, bytes: file.length + r.entry.size };
  }

  /** Whole entry: the record (unless indexed), then one read of the body file. */
  async read(key: string): Promise<{ entry: CacheEntry<M>; body: Buffer } | undefined> {
    const h = this.hash(key);
    for (let attempt = 0; ; attempt++) {
      const seen = this.index.get(h);
      const found = await this.load(h, key, seen);
      if (!found) return undefined;
      let body: Buffer;
      try {
        body = await readFile(this.path(bodyPath(h, found.version)));
      } catch (err) {
        // Replaced between the record and the body read (the old body is unlinked once the new
        // record is in): the index names the newer version, so read that one instead of a miss.
        if (attempt < 3 && isErr(err, 'ENOENT') && this.index.get(h) !== seen) continue;
        return this.lost(h, seen, err);
      }
      if (body.length !== found.entry.size) return this.lost(h, seen, null, true);
      this.index.adopt(h, seen, found);
      return { entry: found.entry, body };
    }
  }

  /** Metadata only: from the index, or the record the first time after a scan. */
  async entry(key: string): Promise<CacheEntry<M> | undefined> {
    const h = this.hash(key);
    const seen = this.index.get(h);
    if (seen?.entry) {
      this.index.use(h, seen);
      return seen.entry.key === key ? seen.entry : undefined;
    }
    const found = await this.load(h, key, seen);
    if (!found) return undefined;
    // The body must be there for the record to be an entry (a 304 or HEAD answered from it).
    const st = await stat(this.path(bodyPath(h, found.version))).catch((err: unknown) =>
      this.lost(h, seen, err),
    );
    if (!st) return undefined;
    if (st.size !== found.entry.size) return this.lost(h, seen, null, true);
    this.index.adopt(h, seen, found);
    return found.entry;
  }

  /** The body version of this stored version of an entry, if it is still the one on disk. */
  private async versionOf(entry: CacheEntry<M>): Promise<{ h: string; version: string } | undefined> {
    const h = this.hash(entry.key);
    const slot = this.index.get(h);
    if (slot?.entry) return same(slot.entry, entry) ? { h, version: slot.version } : undefined;
    const found = await this.load(h, entry.key, slot);
    return found && same(found.entry, entry) ? { h, version: found.version } : undefined;
  }

  /**
   * The body file of this stored version, relative to the directory (what an nginx alias of it
   * serves), when the index knows it; undefined if replaced, removed or not loaded yet.
   */
  bodyFile(entry: CacheEntry<M>): string | undefined {
    const h = this.hash(entry.key);
    const slot = this.index.get(h);
    return slot?.entry && same(slot.entry, entry) ? bodyPath(h, slot.version) : undefined;
  }

  /** Bytes start..end of this version of an entry; an open body file is that version to the end. */
  async stream(entry: CacheEntry<M>, start: number, end: number): Promise<Readable | undefined> {
    const v = await this.versionOf(entry);
    if (!v) return undefined;
    let fh: FileHandle;
    try {
      fh = await open(this.path(bodyPath(v.h, v.version)), 'r');
    } catch (err) {
      // Gone (replaced meanwhile, or removed by hand): a miss; the fill that follows replaces it.
      if (!isErr(err, 'ENOENT')) this.onError(err);
      return undefined;
    }
    if (end >= start) return new FileRangeStream(fh, start, Math.min(end, entry.size - 1));
    await fh.close();
    return Readable.from([]);
  }

  put(entry: CacheEntry<M>, body: Buffer): Promise<boolean> {
    const version = newVersion();
    return this.write(this.hash(entry.key), async (tmp) => {
      const record = recordOf(entry, version);
      if (body.length + record.length > this.itemBytes) return null;
      await writeFile(tmp.body, body, { flag: 'wx' });
      await writeFile(tmp.record, record, { flag: 'wx' });
      return { ...tmp, entry, version, bytes: body.length + record.length };
    });
  }

  writer(key: string, meta: M, ttlMs: number | undefined, expectedSize: number | undefined): CacheWriter {
    const h = this.hash(key);
    const claim = this.index.claim(h, key);
    return new CacheWriter(
      {
        tempPath: () => this.tempFile(),
        maxBytes: this.itemBytes,
        commit: (tmp, size) => this.publishFile(h, claim, key, tmp, size, meta, ttlMs),
        abandon: (err) => {
          if (err) this.onError(err);
          this.index.release(h, claim);
        },
      },
      expectedSize,
    );
  }

  /** A temporary path in the tier's directory (same file system: publishing is a rename), or null. */
  async tempFile(): Promise<string | null> {
    return (await this.opened) ? this.tempName() : null;
  }

  /** Publishes a finished body file from tempFile() as the entry of `key` (it owns the file from here). */
  publish(key: string, file: string, size: number, meta: M, ttlMs: number | undefined): Promise<boolean> {
    const h = this.hash(key);
    const claim = this.index.claim(h, key);
    return this.publishFile(h, claim, key, file, size, meta, ttlMs);
  }

  /** Writes the record beside a body file and publishes both; false (files removed) when not stored. */
  private async publishFile(
    h: string,
    claim: symbol,
    key: string,
    tmp: string,
    size: number,
    meta: M,
    ttlMs: number | undefined,
  ): Promise<boolean> {
    const now = Date.now();
    const expiresAt = ttlMs === undefined ? null : now + ttlMs;
    const entry: CacheEntry<M> = { key, size, meta, storedAt: now, checkedAt: now, expiresAt };
    const version = newVersion();
    const staged: Staged<M> = { body: tmp, record: this.tempName(), entry, version, bytes: 0 };
    try {
      const record = recordOf(entry, version);
      staged.bytes = size + record.length;
      if (staged.bytes <= this.itemBytes) {
        await writeFile(staged.record, record, { flag: 'wx' });
        return await this.commit(h, claim, staged);
      }
    } catch (err) {
      this.onError(err);
    }
    this.index.release(h, claim);
    await this.discard(staged);
    return false;
  }

  /** Rewrites the record of `old` as `next` (the body stays); null when not on disk. */
  touch(old: CacheEntry<M>, next: CacheEntry<M>): Promise<boolean> | null {
    const h = this.hash(old.key);
    // Not on disk, or a newer body is being written (it will carry its own fresh record).
    if (!this.index.has(h) || this.index.claimed(h)) return null;
    return this.write(h, async (tmp) => {
      const v = await this.versionOf(old);
      if (!v) return null;
      const record = recordOf(next, v.version);
      await writeFile(tmp.record, record, { flag: 'wx' });
      return {
        body: null,
        record: tmp.record,
        entry: next,
        version: v.version,
        bytes: next.size + record.length,
      };
    });
  }

  /** Removes an entry and cancels a write of it still in progress. */
  delete(key: string): void {
    const h = this.hash(key);
    const slot = this.index.remove(h);
    // Also when not indexed: an entry of an earlier run the start-up scan has not reached yet (its
    // body, not known here, is removed by a later scan).
    this.retire(h, slot?.version ?? null);
  }

  /**
   * Re-reads the directory: adopts entries written by other processes (cluster workers share it)
   * as least recently used, forgets entries whose files are gone, removes orphaned bodies, then
   * evicts over the budget. Runs at start and again after a tenth of the budget was written.
   */
  rescan(): Promise<void> {
    this.scanning ??= this.scan()
      .catch(this.onError)
      .finally(() => {
        this.scanning = null;
        this.index.endScan();
      });
    return this.scanning;
  }

  /** Entry files that are gone or unreadable: forgotten (removed when foreign or torn), unless changed since. */
  private lost(h: string, seen: Slot<M> | undefined, err: unknown, foreign = false): undefined {
    if (err && !isErr(err, 'ENOENT')) this.onError(err);
    if (this.index.drop(h, seen) && foreign) this.retire(h, seen?.version ?? null);
    return undefined;
  }

  /** Writes temporary files with `fill` (null = not storable) and publishes them. */
  private async write(
    h: string,
    fill: (tmp: { body: string; record: string }) => Promise<Staged<M> | null>,
  ): Promise<boolean> {
    const claim = this.index.claim(h, h);
    const tmp = { body: this.tempName(), record: this.tempName() };
    try {
      const staged = (await this.opened) ? await fill(tmp) : null;
      if (staged) return await this.commit(h, claim, staged);
    } catch (err) {
      this.onError(err);
    }
    this.index.release(h, claim);
    await this.discard(tmp);
    return false;
  }

  private async discard(tmp: { body: string | null; record: string }): Promise<void> {
    if (tmp.body) await rm(tmp.body, { force: true }).catch(() => {});
    await rm(tmp.record, { force: true }).catch(() => {});
  }

  /**
   * Publishes staged files unless a newer write or a delete claimed the key since: the body under
   * its new version name first, then the record over the old one (the switch readers see).
   */
  private async commit(h: string, claim: symbol, s: Staged<M>): Promise<boolean> {
    const shard = h.slice(0, 2);
    const body = this.path(bodyPath(h, s.version));
    try {
      if (!this.shards.has(shard)) {
        await mkdir(join(this.dir, shard), { recursive: true });
        this.shards.add(shard);
      }
      if (!this.index.owns(h, claim)) {
        await this.discard(s);
        return false;
      }
      // Synchronous, so no other change of this key can slip between the check and the renames.
      if (s.body) renameSync(s.body, body);
      try {
        renameSync(s.record, this.path(metaPath(h)));
      } catch (err) {
        if (s.body) renameSync(body, s.body);
        throw err;
      }
    } catch (err) {
      this.onError(err);
      this.index.release(h, claim);
      await this.discard(s);
      return false;
    }
    const old = this.index.publish(h, s);
    if (old && old.version !== s.version) this.bodies.retire(h, old.version);
    this.writes++;
    this.sinceScan += s.bytes;
    this.evict();
    if (this.sinceScan > this.budget / 10) void this.rescan();
    return true;
  }

  /** Drops least recently used entries until the tier is within its budget. */
  private evict(): void {
    for (const v of this.index.evict(this.budget)) this.retire(v.h, v.version);
  }

  /**
   * Takes an entry's record out of its name at once (renamed into tmp/, deleted in the background),
   * then retires its body file.
   */
  private retire(h: string, version: string | null): void {
    // Before tmp/ exists (a delete at start-up), wait for it: still ahead of any later write.
    if (!this.tmpReady) {
      void this.opened.then((ok) => ok && this.retire(h, version));
      return;
    }
    const trash = this.tempName();
    const record = this.path(metaPath(h));
    try {
      renameSync(record, trash);
      void rm(trash, { force: true }).catch(this.onError);
    } catch (err) {
      if (!isErr(err, 'ENOENT')) void rm(record, { force: true }).catch(this.onError);
    }
    if (version) this.bodies.retire(h, version);
  }

  private async scan(): Promise<void> {
    this.index.startScan();
    if (!(await this.opened)) return;
    this.sinceScan = 0;
    const live = await this.bodies.scan();
    for (const h of live.keys()) this.shards.add(h.slice(0, 2));
    // Adopted entries are older than anything used in this run (disk-index.ts merge()).
    this.index.merge(live);
    this.evict();
  }
}

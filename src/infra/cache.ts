// The one memory+disk cache every utility uses; utilities keep only their policy (keys, TTLs, what
// is cacheable). Memory: a byte-bounded LRU of small bodies. Disk: one file per entry (body, then
// a JSON trailer with key and metadata, see trailer-file.ts) under <dir>/<ab>/<sha256(key)>, an
// in-memory LRU index bounded by bytes, temp file + rename so no partial entry is ever visible,
// and an asynchronous scan that adopts the files of earlier runs (and of sibling cluster workers).
import { createHash, randomUUID } from 'node:crypto';
import { constants, renameSync } from 'node:fs';
import { appendFile, copyFile, mkdir, open, readdir, readFile, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CacheWriter } from './cache-writer.ts';
import { ByteLru } from './lru.ts';
import { isErr, readTrailer, splitTrailer, sweepTemp, trailerBytes } from './trailer-file.ts';

const MAGIC = Buffer.from('DVC1');
/** Bookkeeping counted per memory entry, so many tiny entries cannot overrun the budget. */
const MEMORY_OVERHEAD = 256;
/** Temporary files of a live process are left alone unless this old (a wedged writer). */
const STALE_TMP_MS = 24 * 3600 * 1000;
const NAME = /^[0-9a-f]{64}$/;
const SHARD = /^[0-9a-f]{2}$/;

export interface CacheEntry<M> {
  readonly key: string;
  /** Body bytes. */
  readonly size: number;
  /** What the utility stored with the body (JSON-serialisable). */
  readonly meta: M;
  readonly storedAt: number;
  /** When the entry was stored or last confirmed by touch(). */
  readonly checkedAt: number;
  /** Ms since the epoch after which the entry is stale; null without a TTL. */
  readonly expiresAt: number | null;
}

export interface CacheHit<M> {
  entry: CacheEntry<M>;
  body: Buffer;
  tier: 'memory' | 'disk';
}

export interface CacheOptions {
  /** Names the cache in stats and logs. */
  name: string;
  /** Directory of the disk tier; null = memory only. */
  dir: string | null;
  /** Disk budget in bytes (files, trailers included); 0 = no disk tier. */
  diskBytes: number;
  /** Memory budget in bytes; 0 = no memory tier. */
  memoryBytes: number;
  /** Largest body the memory tier keeps (default: a quarter of its budget). */
  memoryItemBytes?: number;
  /** Largest file the disk tier keeps (default: a quarter of its budget). */
  diskItemBytes?: number;
  /** Disk failures: reported, then treated as misses. */
  onError?: (err: unknown) => void;
}

export interface PutOptions {
  /** Freshness lifetime: sets the entry's expiresAt. */
  ttlMs?: number;
  /** false: disk only (large or rarely reused bodies stay out of memory). */
  memory?: boolean;
}

export interface CacheStats {
  name: string;
  entries: number;
  bytes: number;
  memoryEntries: number;
  memoryBytes: number;
  hits: number;
  misses: number;
  memoryHits: number;
  diskHits: number;
  writes: number;
  evictions: number;
}

interface Trailer<M> {
  k: string;
  n: number;
  s: number;
  c: number;
  e: number | null;
  m: M;
}

interface Slot<M> {
  /** File bytes counted against the disk budget. */
  bytes: number;
  /** Loaded on first use after a scan. */
  entry: CacheEntry<M> | null;
}

const same = (a: CacheEntry<unknown>, b: CacheEntry<unknown>) =>
  a.key === b.key && a.storedAt === b.storedAt && a.size === b.size;

const trailerOf = <M>(e: CacheEntry<M>): Trailer<M> => ({
  k: e.key,
  n: e.size,
  s: e.storedAt,
  c: e.checkedAt,
  e: e.expiresAt,
  m: e.meta,
});

function entryOf<M>(key: string, value: unknown, bodySize: number): CacheEntry<M> | null {
  const t = value as Partial<Trailer<M>> | null;
  if (!t || t.k !== key || t.n !== bodySize || typeof t.s !== 'number' || typeof t.c !== 'number')
    return null;
  const expiresAt = typeof t.e === 'number' ? t.e : null;
  return { key, size: bodySize, meta: t.m as M, storedAt: t.s, checkedAt: t.c, expiresAt };
}

export class Cache<M> {
  readonly name: string;
  readonly diskItemBytes: number;
  /** Settles when the start-up scan of the disk tier is done (entries are served before, too). */
  readonly ready: Promise<void>;
  private readonly dir: string;
  private readonly tmpDir: string;
  private readonly diskBytes: number;
  private readonly mem: ByteLru<{ entry: CacheEntry<M>; body: Buffer }> | null;
  private readonly onError: (err: unknown) => void;
  private readonly opened: Promise<boolean>;
  /** Recency order: the first slot is the least recently used. */
  private index = new Map<string, Slot<M>>();
  private used = 0;
  /** The newest write per hash: an older write, or one a delete cancelled, is not published. */
  private claims = new Map<string, symbol>();
  private writes = new Set<Promise<unknown>>();
  private shards = new Set<string>();
  private tmpReady = false;
  /** Hashes changed while a scan runs: the scan's older view of them is ignored. */
  private touched: Set<string> | null = null;
  private scanning: Promise<void> | null = null;
  private sinceScan = 0;
  private counts = { hits: 0, misses: 0, memoryHits: 0, diskHits: 0, writes: 0, evictions: 0 };

  constructor(o: CacheOptions) {
    this.name = o.name;
    this.onError = o.onError ?? (() => {});
    this.mem =
      o.memoryBytes > 0
        ? new ByteLru(o.memoryBytes, (v) => v.body.length + MEMORY_OVERHEAD, o.memoryItemBytes)
        : null;
    this.dir = o.dir ?? '';
    this.tmpDir = join(this.dir, 'tmp');
    this.diskBytes = o.dir ? Math.max(0, o.diskBytes) : 0;
    this.diskItemBytes = Math.min(o.diskItemBytes ?? this.diskBytes / 4, this.diskBytes);
    this.opened =
      this.diskBytes > 0
        ? mkdir(this.tmpDir, { recursive: true })
            .then(() => sweepTemp(this.tmpDir, STALE_TMP_MS))
            .then(
              () => {
                this.tmpReady = true;
                return true;
              },
              (err: unknown) => {
                this.onError(err);
                return false;
              },
            )
        : Promise.resolve(false);
    this.ready = this.rescan();
  }

  /** Largest body the memory tier keeps (0 without one). */
  get memoryItemBytes(): number {
    return this.mem?.maxItemBytes ?? 0;
  }

  private get diskOn(): boolean {
    return this.diskBytes > 0;
  }

  private hash(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  private pathOf(h: string): string {
    return join(this.dir, h.slice(0, 2), h);
  }

  private tempName(): string {
    return join(this.tmpDir, `${process.pid}-${randomUUID()}`);
  }

  /** Body and metadata: memory, then disk (a disk hit is copied into memory unless memory: false). */
  async get(key: string, o: { memory?: boolean } = {}): Promise<CacheHit<M> | undefined> {
    const m = this.mem?.get(key);
    if (m) return this.hit('memory', { ...m, tier: 'memory' });
    const found = await this.readDisk(key);
    if (!found) return this.miss();
    if (o.memory !== false) this.mem?.set(key, found);
    return this.hit('disk', { ...found, tier: 'disk' });
  }

  /** Metadata only (for answers that may need no body: 304, HEAD, a decision to revalidate). */
  async peek(key: string): Promise<CacheEntry<M> | undefined> {
    const m = this.mem?.get(key);
    if (m) return this.hit('memory', m.entry);
    const e = await this.diskEntry(key);
    return e ? this.hit('disk', e) : this.miss();
  }

  /** The body of an entry peek() returned; undefined if it has since been replaced or removed. */
  async body(entry: CacheEntry<M>, o: { memory?: boolean } = {}): Promise<Buffer | undefined> {
    const m = this.mem?.get(entry.key);
    if (m && same(m.entry, entry)) return m.body;
    const found = await this.readDisk(entry.key);
    if (!found || !same(found.entry, entry)) return undefined;
    if (o.memory !== false) this.mem?.set(entry.key, found);
    return found.body;
  }

  /**
   * Bytes start..end (inclusive) of an entry peek() returned, streamed from disk; undefined if it
   * has since been replaced or removed. The open handle keeps reading the version it opened.
   */
  async stream(entry: CacheEntry<M>, start = 0, end = entry.size - 1): Promise<Readable | undefined> {
    if (!this.diskOn) return undefined;
    const fh = await open(this.pathOf(this.hash(entry.key)), 'r').catch(() => null);
    if (!fh) return undefined;
    try {
      const t = await readTrailer(fh, MAGIC);
      const e = t && entryOf<M>(entry.key, t.value, t.bodySize);
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

  /** Stores a body: in memory at once, on disk in the background (the promise says if it was). */
  put(key: string, body: Buffer, meta: M, o: PutOptions = {}): Promise<boolean> {
    const now = Date.now();
    const entry: CacheEntry<M> = {
      key,
      size: body.length,
      meta,
      storedAt: now,
      checkedAt: now,
      expiresAt: o.ttlMs === undefined ? null : now + o.ttlMs,
    };
    if (o.memory === false) this.mem?.delete(key);
    else this.mem?.set(key, { entry, body });
    if (!this.diskOn) return Promise.resolve(false);
    const h = this.hash(key);
    return this.track(
      this.write(h, async (tmp) => {
        const tail = trailerBytes(MAGIC, trailerOf(entry));
        if (body.length + tail.length > this.diskItemBytes) return null;
        const fh = await open(tmp, 'wx');
        try {
          await fh.writev([body, tail]);
        } finally {
          await fh.close();
        }
        return { entry, bytes: body.length + tail.length };
      }),
    );
  }

  /** A streaming put for bodies too large to buffer; pipe into it, then await `done`. */
  writer(key: string, meta: M, o: PutOptions & { expectedSize?: number } = {}): CacheWriter {
    this.mem?.delete(key);
    const h = this.hash(key);
    const claim = Symbol(key);
    if (this.diskOn) this.claims.set(h, claim);
    let entry: CacheEntry<M> | null = null;
    const writer = new CacheWriter(
      {
        tempPath: async () => (this.diskOn && (await this.opened) ? this.tempName() : null),
        maxBytes: this.diskItemBytes,
        trailer: (size) => {
          const now = Date.now();
          const expiresAt = o.ttlMs === undefined ? null : now + o.ttlMs;
          entry = { key, size, meta, storedAt: now, checkedAt: now, expiresAt };
          return trailerBytes(MAGIC, trailerOf(entry));
        },
        commit: (tmp, bytes) => this.commit(h, claim, tmp, entry!, bytes),
        abandon: (err) => {
          if (err) this.onError(err);
          if (this.claims.get(h) === claim) this.claims.delete(h);
        },
      },
      o.expectedSize,
    );
    this.track(writer.done);
    return writer;
  }

  /**
   * Marks an entry confirmed now (and gives it a new TTL if asked). On disk the file is copied with
   * a new trailer and renamed over the old one: cost grows with the body, meant for small entries.
   */
  async touch(key: string, o: { ttlMs?: number } = {}): Promise<boolean> {
    const m = this.mem?.get(key);
    const old = m?.entry ?? (await this.diskEntry(key));
    if (!old) return false;
    const now = Date.now();
    const expiresAt = o.ttlMs === undefined ? old.expiresAt : now + o.ttlMs;
    const entry: CacheEntry<M> = { ...old, checkedAt: now, expiresAt };
    if (m) this.mem?.set(key, { entry, body: m.body });
    const h = this.hash(key);
    // Not on disk, or a newer body is being written (it will carry its own fresh trailer).
    if (!this.index.has(h) || this.claims.has(h)) return Boolean(m);
    return this.track(
      this.write(h, async (tmp) => {
        await copyFile(this.pathOf(h), tmp, constants.COPYFILE_FICLONE);
        const fh = await open(tmp, 'r');
        const t = await readTrailer(fh, MAGIC).finally(() => fh.close());
        const copied = t && entryOf<M>(key, t.value, t.bodySize);
        if (!copied || !same(copied, old)) return null;
        const tail = trailerBytes(MAGIC, trailerOf(entry));
        await truncate(tmp, entry.size);
        await appendFile(tmp, tail);
        return { entry, bytes: entry.size + tail.length };
      }),
    );
  }

  /** Removes an entry from both tiers and cancels a write of it still in progress. */
  delete(key: string): void {
    this.mem?.delete(key);
    if (!this.diskOn) return;
    const h = this.hash(key);
    this.claims.delete(h);
    this.touched?.add(h);
    const slot = this.index.get(h);
    if (slot) this.forget(h, slot);
    // Also when not indexed: a file of an earlier run the start-up scan has not reached yet.
    this.retire(h);
  }

  stats(): CacheStats {
    return {
      name: this.name,
      entries: this.index.size,
      bytes: this.used,
      memoryEntries: this.mem?.size ?? 0,
      memoryBytes: this.mem?.bytes ?? 0,
      ...this.counts,
    };
  }

  /** Waits for background writes and a running scan (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.writes.size > 0 || this.scanning) await Promise.all([...this.writes, this.scanning]);
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

  private hit<T>(tier: 'memory' | 'disk', v: T): T {
    this.counts.hits++;
    if (tier === 'memory') this.counts.memoryHits++;
    else this.counts.diskHits++;
    return v;
  }

  private miss(): undefined {
    this.counts.misses++;
    return undefined;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.writes.add(p);
    void p.finally(() => this.writes.delete(p));
    return p;
  }

  /** Whether to look on disk: indexed, or not yet known while a scan runs (restart reuse). */
  private maybeOnDisk(h: string): boolean {
    return this.diskOn && (this.index.has(h) || this.scanning !== null);
  }

  private async readDisk(key: string): Promise<{ entry: CacheEntry<M>; body: Buffer } | undefined> {
    const h = this.hash(key);
    if (!this.maybeOnDisk(h)) return undefined;
    let file: Buffer;
    try {
      file = await readFile(this.pathOf(h));
    } catch (err) {
      return this.lost(h, err);
    }
    const split = splitTrailer(file, MAGIC);
    const entry = split && entryOf<M>(key, split.value, split.body.length);
    if (!entry) return this.lost(h, null, true);
    this.adopt(h, file.length, entry);
    return { entry, body: split.body };
  }

  private async diskEntry(key: string): Promise<CacheEntry<M> | undefined> {
    const h = this.hash(key);
    const slot = this.index.get(h);
    if (slot?.entry) {
      this.index.delete(h);
      this.index.set(h, slot);
      return slot.entry.key === key ? slot.entry : undefined;
    }
    if (!this.maybeOnDisk(h)) return undefined;
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(this.pathOf(h), 'r');
    } catch (err) {
      return this.lost(h, err);
    }
    try {
      const t = await readTrailer(fh, MAGIC);
      const entry = t && entryOf<M>(key, t.value, t.bodySize);
      if (!entry) return this.lost(h, null, true);
      this.adopt(h, (await fh.stat()).size, entry);
      return entry;
    } catch (err) {
      return this.lost(h, err);
    } finally {
      await fh.close();
    }
  }

  /** An indexed file that is gone or unreadable: forgotten (and removed when foreign or torn). */
  private lost(h: string, err: unknown, foreign = false): undefined {
    if (err && !isErr(err, 'ENOENT')) this.onError(err);
    const slot = this.index.get(h);
    if (slot) this.forget(h, slot);
    if (foreign) this.retire(h);
    return undefined;
  }

  /** Records a file found on disk as most recently used, unless a newer change of it is pending. */
  private adopt(h: string, bytes: number, entry: CacheEntry<M>): void {
    const slot = this.index.get(h);
    if (!slot && (this.claims.has(h) || this.touched?.has(h))) return;
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
  private async write(
    h: string,
    fill: (tmp: string) => Promise<{ entry: CacheEntry<M>; bytes: number } | null>,
  ): Promise<boolean> {
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
    this.counts.writes++;
    this.sinceScan += bytes;
    this.evict();
    if (this.sinceScan > this.diskBytes / 10) void this.rescan();
    return true;
  }

  /** Drops least recently used files until the disk tier is within its budget. */
  private evict(): void {
    for (const [h, slot] of this.index) {
      if (this.used <= this.diskBytes) return;
      this.forget(h, slot);
      this.touched?.add(h);
      this.counts.evictions++;
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
      if (isErr(err, 'ENOENT')) return;
      void rm(this.pathOf(h), { force: true }).catch(this.onError);
      return;
    }
    void rm(trash, { force: true }).catch(this.onError);
  }

  private async scan(): Promise<void> {
    this.touched = new Set();
    if (!(await this.opened)) return;
    this.sinceScan = 0;
    const found = new Map<string, { bytes: number; mtime: number }>();
    for (const shard of await readdir(this.dir)) {
      if (!SHARD.test(shard)) continue;
      this.shards.add(shard);
      const names = await readdir(join(this.dir, shard)).catch(() => []);
      await Promise.all(
        names.map(async (name) => {
          const path = join(this.dir, shard, name);
          // Files of older cache formats (other names) are removed, not left outside the budget.
          if (!NAME.test(name) || !name.startsWith(shard)) return rm(path, { force: true }).catch(() => {});
          const st = await stat(path).catch(() => null);
          if (st?.isFile()) found.set(name, { bytes: st.size, mtime: st.mtimeMs });
        }),
      );
    }
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

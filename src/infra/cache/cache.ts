// The one memory+disk cache every utility uses; utilities keep only their policy (keys, TTLs, what
// is cacheable). Memory: a byte-bounded LRU of small bodies. Disk (cache-disk.ts): a byte-bounded
// LRU of entries written atomically and reused after a restart, each body in a file of its own
// that a front proxy can send (bodyFile()). Keys are any string (a utility that
// varies on request headers puts them in its key). Expired entries are still returned: serving
// stale (while revalidating, or when the origin is down) is the utility's decision.
import type { Readable } from 'node:stream';
import { DiskTier } from './disk.ts';
import { type CacheEntry, same } from './entry-file.ts';
import { ByteLru } from './lru.ts';
import { CacheWriter } from './writer.ts';

export type { CacheEntry } from './entry-file.ts';

/** Bookkeeping counted per memory entry, so many tiny entries cannot overrun the budget. */
const MEMORY_OVERHEAD = 256;

export interface CacheHit<M> {
  entry: CacheEntry<M>;
  body: Buffer;
  tier: 'memory' | 'disk';
}

export interface CacheOptions {
  /** Names the cache in stats and metrics. */
  name: string;
  /** Directory of the disk tier; null = memory only. */
  dir: string | null;
  /** Disk budget in bytes (bodies and their records); 0 = no disk tier. */
  diskBytes: number;
  /** Memory budget in bytes; 0 = no memory tier. */
  memoryBytes: number;
  /** Largest body the memory tier keeps (default: a quarter of its budget). */
  memoryItemBytes?: number;
  /** Largest file the disk tier keeps (default: a quarter of its budget). */
  diskItemBytes?: number;
  /**
   * How long a replaced or evicted body file stays under its name before it is removed (default 0):
   * set it when a front proxy is told to send body files (bodyFile()), so one told a moment before
   * the replacement still finds the file. Such files are outside the budget meanwhile.
   */
  retiredBodyMs?: number;
  /** Disk failures: reported, then treated as misses. */
  onError?: (err: unknown) => void;
}

export interface PutOptions {
  /** Freshness lifetime: sets the entry's expiresAt. */
  ttlMs?: number;
  /** false: disk only (large or rarely reused bodies stay out of memory). */
  memory?: boolean;
  /** false: memory only (a body not yet known to be reused; a later put writes it to disk). */
  disk?: boolean;
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

export class Cache<M> {
  readonly name: string;
  readonly diskItemBytes: number;
  /** Settles when the start-up scan of the disk tier is done (entries are served before, too). */
  readonly ready: Promise<void>;
  private readonly mem: ByteLru<{ entry: CacheEntry<M>; body: Buffer }> | null;
  private readonly disk: DiskTier<M> | null;
  private writes = new Set<Promise<unknown>>();
  private counts = { hits: 0, misses: 0, memoryHits: 0, diskHits: 0 };

  constructor(o: CacheOptions) {
    this.name = o.name;
    this.mem =
      o.memoryBytes > 0
        ? new ByteLru(o.memoryBytes, (v) => v.body.length + MEMORY_OVERHEAD, o.memoryItemBytes)
        : null;
    const diskBytes = o.dir ? Math.max(0, o.diskBytes) : 0;
    this.diskItemBytes = Math.min(o.diskItemBytes ?? diskBytes / 4, diskBytes);
    this.disk =
      o.dir && diskBytes > 0
        ? new DiskTier<M>({
            dir: o.dir,
            budget: diskBytes,
            itemBytes: this.diskItemBytes,
            retiredBodyMs: o.retiredBodyMs ?? 0,
            onError: o.onError ?? (() => {}),
          })
        : null;
    this.ready = this.disk ? this.disk.rescan() : Promise.resolve();
  }

  /** Largest body the memory tier keeps (0 without one). */
  get memoryItemBytes(): number {
    return this.mem?.maxItemBytes ?? 0;
  }

  /** Body and metadata: memory, then disk (a disk hit is copied into memory unless memory: false). */
  async get(key: string, o: { memory?: boolean } = {}): Promise<CacheHit<M> | undefined> {
    const m = this.mem?.get(key);
    if (m) return this.hit('memory', { ...m, tier: 'memory' });
    const found = await this.disk?.read(key);
    if (!found) return this.miss();
    if (o.memory !== false) this.mem?.set(key, found);
    return this.hit('disk', { ...found, tier: 'disk' });
  }

  /**
   * A memory-tier hit, synchronously (counted as one), or undefined (not counted: the caller goes on
   * to get() or peek(), which count the outcome). The hot path of small cached answers: no await.
   * `usable` turns down an entry the caller would not answer with.
   */
  memory(key: string, usable?: (e: CacheEntry<M>) => boolean): CacheHit<M> | undefined {
    const m = this.mem?.get(key);
    // One the caller cannot use (a stale copy it revalidates) is not counted here either.
    if (!m || (usable && !usable(m.entry))) return undefined;
    return this.hit('memory', { entry: m.entry, body: m.body, tier: 'memory' });
  }

  /**
   * Whether the memory tier holds exactly `body` under `key` (counted as a memory hit when it
   * does): memory(key)?.body === body without the hit object, for the fast lane's check before
   * each repeat of a remembered answer.
   */
  holds(key: string, body: Buffer): boolean {
    if (this.mem?.get(key)?.body !== body) return false;
    this.counts.hits++;
    this.counts.memoryHits++;
    return true;
  }

  /** Metadata only (for answers that may need no body: 304, HEAD, a decision to revalidate). */
  async peek(key: string): Promise<CacheEntry<M> | undefined> {
    const m = this.mem?.get(key);
    if (m) return this.hit('memory', m.entry);
    const e = await this.disk?.entry(key);
    return e ? this.hit('disk', e) : this.miss();
  }

  /** The body of an entry peek() returned; undefined if it has since been replaced or removed. */
  async body(entry: CacheEntry<M>, o: { memory?: boolean } = {}): Promise<Buffer | undefined> {
    const m = this.mem?.get(entry.key);
    if (m && same(m.entry, entry)) return m.body;
    const found = await this.disk?.read(entry.key);
    if (!found || !same(found.entry, entry)) return undefined;
    if (o.memory !== false) this.mem?.set(entry.key, found);
    return found.body;
  }

  /**
   * Bytes start..end (inclusive) of an entry peek() returned, streamed from disk; undefined if it
   * has since been replaced or removed.
   */
  stream(entry: CacheEntry<M>, start = 0, end = entry.size - 1): Promise<Readable | undefined> {
    return this.disk ? this.disk.stream(entry, start, end) : Promise.resolve(undefined);
  }

  /**
   * The file holding exactly the body of an entry peek() returned, relative to the disk tier's
   * directory ("ab/<hash>.<version>"; never rewritten, so a front proxy may send it with
   * X-Accel-Redirect). Undefined without a disk copy of this version known to the index.
   */
  bodyFile(entry: CacheEntry<M>): string | undefined {
    return this.disk?.bodyFile(entry);
  }

  /** Stores a body: in memory at once, on disk in the background (the promise says if it was). */
  put(key: string, body: Buffer, meta: M, o: PutOptions = {}): Promise<boolean> {
    const now = Date.now();
    const expiresAt = o.ttlMs === undefined ? null : now + o.ttlMs;
    const entry: CacheEntry<M> = { key, size: body.length, meta, storedAt: now, checkedAt: now, expiresAt };
    if (o.memory === false) this.mem?.delete(key);
    else this.mem?.set(key, { entry, body });
    return this.disk && o.disk !== false ? this.track(this.disk.put(entry, body)) : Promise.resolve(false);
  }

  /**
   * A streaming put for bodies too large to buffer: pipe into it, then await `done` (true once
   * stored). It never errors towards its source; a body over the item cap is simply not kept.
   */
  writer(key: string, meta: M, o: PutOptions & { expectedSize?: number } = {}): CacheWriter {
    this.mem?.delete(key);
    const w = this.disk ? this.disk.writer(key, meta, o.ttlMs, o.expectedSize) : CacheWriter.nowhere();
    this.track(w.done);
    return w;
  }

  /**
   * A temporary path in the disk tier's directory for a body written outside the cache (a Spool),
   * to hand over with adopt(); null without a disk tier.
   */
  tempFile(): Promise<string | null> {
    return this.disk ? this.disk.tempFile() : Promise.resolve(null);
  }

  /**
   * Publishes a finished body file from tempFile() as the entry of `key` (disk only; the cache owns
   * the file from here and removes it when not stored). True once stored.
   */
  adopt(key: string, file: string, size: number, meta: M, o: { ttlMs?: number } = {}): Promise<boolean> {
    this.mem?.delete(key);
    if (!this.disk) return Promise.resolve(false);
    return this.track(this.disk.publish(key, file, size, meta, o.ttlMs));
  }

  /**
   * Marks an entry confirmed now (and gives it a new TTL if asked). On disk only its small record
   * is rewritten (temporary file + rename); the body file stays.
   */
  async touch(key: string, o: { ttlMs?: number } = {}): Promise<boolean> {
    const m = this.mem?.get(key);
    const old = m?.entry ?? (await this.disk?.entry(key));
    if (!old) return false;
    const now = Date.now();
    const expiresAt = o.ttlMs === undefined ? old.expiresAt : now + o.ttlMs;
    const entry: CacheEntry<M> = { ...old, checkedAt: now, expiresAt };
    if (m) this.mem?.set(key, { entry, body: m.body });
    const written = this.disk?.touch(old, entry);
    return written ? this.track(written) : Boolean(m);
  }

  /** Removes an entry from both tiers and cancels a write of it still in progress. */
  delete(key: string): void {
    this.mem?.delete(key);
    this.disk?.delete(key);
  }

  stats(): CacheStats {
    return {
      name: this.name,
      entries: this.disk?.entries ?? 0,
      bytes: this.disk?.bytes ?? 0,
      memoryEntries: this.mem?.size ?? 0,
      memoryBytes: this.mem?.bytes ?? 0,
      ...this.counts,
      writes: this.disk?.writes ?? 0,
      evictions: this.disk?.evictions ?? 0,
    };
  }

  /** Waits for background writes and a running scan (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.writes.size > 0 || this.disk?.busy) await Promise.all([...this.writes, this.disk?.busy]);
  }

  /** Re-reads the disk tier's directory now (see DiskTier.rescan). */
  rescan(): Promise<void> {
    return this.disk ? this.disk.rescan() : Promise.resolve();
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
}

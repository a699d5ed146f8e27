// What the disk tier (disk.ts) holds, in memory: one slot per entry in recency order, bounded by
// bytes; the newest write claimed per entry; and how a directory scan's view of the entries merges
// with the changes this process made while the scan ran (its view of those is older, so it loses).
// No file system here: disk.ts reads and writes the files and asks this index what to do.
import type { CacheEntry } from './entry-file.ts';
import type { LiveEntry } from './sweep.ts';

export interface Slot<M> {
  /** Body and record bytes counted against the budget. */
  bytes: number;
  /** Body version (the record, once loaded, may name a newer one a sibling process wrote). */
  version: string;
  /** Loaded on first use after a scan. */
  entry: CacheEntry<M> | null;
}

/** An entry read from its files, or about to be published. */
export type Loaded<M> = { entry: CacheEntry<M>; version: string; bytes: number };

export class DiskIndex<M> {
  evictions = 0;
  /** Recency order: the first slot is the least recently used. */
  private slots = new Map<string, Slot<M>>();
  private used = 0;
  /** The newest write per hash: an older write, or one a delete cancelled, is not published. */
  private claims = new Map<string, symbol>();
  /** Hashes changed while a scan runs: the scan's older view of them is ignored. */
  private changed: Set<string> | null = null;

  get size(): number {
    return this.slots.size;
  }

  get bytes(): number {
    return this.used;
  }

  get(h: string): Slot<M> | undefined {
    return this.slots.get(h);
  }

  has(h: string): boolean {
    return this.slots.has(h);
  }

  /** Marks a slot most recently used. */
  use(h: string, slot: Slot<M>): void {
    this.slots.delete(h);
    this.slots.set(h, slot);
  }

  /** Starts a write of `h`: it supersedes every earlier write of it still in progress. */
  claim(h: string, name: string): symbol {
    const claim = Symbol(name);
    this.claims.set(h, claim);
    return claim;
  }

  /** True while `claim` is the newest write of `h` (no newer write, no delete since). */
  owns(h: string, claim: symbol): boolean {
    return this.claims.get(h) === claim;
  }

  /** Ends a write that published nothing. */
  release(h: string, claim: symbol): void {
    if (this.claims.get(h) === claim) this.claims.delete(h);
  }

  /** A write of `h` is in progress. */
  claimed(h: string): boolean {
    return this.claims.has(h);
  }

  /** Records an entry read from disk as most recently used, unless it changed since `seen`. */
  adopt(h: string, seen: Slot<M> | undefined, found: Loaded<M>): void {
    const slot = this.slots.get(h);
    if (slot !== seen || (!slot && (this.claims.has(h) || this.changed?.has(h)))) return;
    if (slot) this.forget(h, slot);
    this.slots.set(h, { bytes: found.bytes, version: found.version, entry: found.entry });
    this.used += found.bytes;
    this.changed?.add(h);
  }

  /**
   * An entry whose files turned out gone or unreadable: forgotten, unless it changed since `seen` or
   * is being written. True when the caller may remove what is left of it.
   */
  drop(h: string, seen: Slot<M> | undefined): boolean {
    if (this.slots.get(h) !== seen || this.claims.has(h)) return false;
    if (seen) this.forget(h, seen);
    return true;
  }

  /** Records a published write as most recently used; the slot it replaced, if any. */
  publish(h: string, s: Loaded<M>): Slot<M> | undefined {
    this.claims.delete(h);
    const old = this.slots.get(h);
    if (old) this.forget(h, old);
    this.slots.set(h, { bytes: s.bytes, version: s.version, entry: s.entry });
    this.used += s.bytes;
    this.changed?.add(h);
    return old;
  }

  /** Forgets an entry and cancels a write of it in progress; the slot it had, if any. */
  remove(h: string): Slot<M> | undefined {
    this.claims.delete(h);
    this.changed?.add(h);
    const slot = this.slots.get(h);
    if (slot) this.forget(h, slot);
    return slot;
  }

  /** Drops least recently used entries until `budget` bytes hold the rest; what it dropped. */
  evict(budget: number): { h: string; version: string }[] {
    const out: { h: string; version: string }[] = [];
    for (const [h, slot] of this.slots) {
      if (this.used <= budget) break;
      this.forget(h, slot);
      this.changed?.add(h);
      this.evictions++;
      out.push({ h, version: slot.version });
    }
    return out;
  }

  /** From now until endScan(), changes are remembered so the scan's older view of them is ignored. */
  startScan(): void {
    this.changed = new Set();
  }

  endScan(): void {
    this.changed = null;
  }

  /**
   * Takes a directory listing (whole entries by hash): entries this process does not know are
   * adopted as least recently used (oldest record first), known ones whose files changed are
   * reloaded on next use, ones gone from the directory are forgotten; what changed here since
   * startScan() stays as it is.
   */
  merge(live: ReadonlyMap<string, LiveEntry>): void {
    const changed = this.changed ?? new Set<string>();
    const next = new Map<string, Slot<M>>();
    const adopted = [...live].filter(([h]) => !this.slots.has(h) && !changed.has(h));
    adopted.sort((a, b) => a[1].mtime - b[1].mtime);
    for (const [h, f] of adopted) next.set(h, { bytes: f.bytes, version: f.version, entry: null });
    for (const [h, slot] of this.slots) {
      const f = live.get(h);
      if (changed.has(h)) next.set(h, slot);
      else if (f)
        next.set(
          h,
          f.bytes === slot.bytes && f.version === slot.version
            ? slot
            : { bytes: f.bytes, version: f.version, entry: null },
        );
    }
    this.slots = next;
    this.used = 0;
    for (const slot of next.values()) this.used += slot.bytes;
  }

  private forget(h: string, slot: Slot<M>): void {
    this.slots.delete(h);
    this.used -= slot.bytes;
  }
}

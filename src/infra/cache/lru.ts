// A least-recently-used map bounded by a byte budget (Map keeps insertion order; a hit re-inserts).
// Shared by the memory tiers of the image, diagram, avatar and proxy caches.

export class ByteLru<V> {
  private map = new Map<string, V>();
  private used = 0;
  /** The most recently used key: a hit on it leaves the order as it is (the lane's hot repeats). */
  private newest: string | undefined;
  /** Entries larger than this are not kept: one huge entry must not flush everything else. */
  readonly maxItemBytes: number;

  readonly maxBytes: number;
  private readonly sizeOf: (v: V) => number;
  constructor(maxBytes: number, sizeOf: (v: V) => number, maxItemBytes = maxBytes / 4) {
    this.maxBytes = maxBytes;
    this.sizeOf = sizeOf;
    this.maxItemBytes = maxItemBytes;
  }

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined && key !== this.newest) {
      this.map.delete(key);
      this.map.set(key, v);
      this.newest = key;
    }
    return v;
  }

  set(key: string, v: V): void {
    const size = this.sizeOf(v);
    // A replacement too large to keep still retires the old value: it is no longer current.
    this.delete(key);
    if (size > this.maxItemBytes) return;
    this.map.set(key, v);
    this.newest = key;
    this.used += size;
    for (const [k] of this.map) {
      if (this.used <= this.maxBytes) break;
      this.delete(k);
    }
  }

  delete(key: string): void {
    const old = this.map.get(key);
    if (old === undefined) return;
    this.map.delete(key);
    if (key === this.newest) this.newest = undefined;
    this.used -= this.sizeOf(old);
  }

  /** Bytes held, by the sizes `sizeOf` reported. */
  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.map.size;
  }
}

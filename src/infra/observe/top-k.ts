// Bounded heavy hitters: the space-saving algorithm (Metwally, Agrawal, El Abbadi 2005) over weighted
// updates, kept in an indexed min-heap so an update costs O(log capacity) and memory never grows past
// `capacity` keys, however many distinct clients or paths a stream holds. A key that is not tracked
// takes the place of the smallest one and inherits its weight (an overestimate bounded by that
// weight), which keeps every true heavy hitter (share > 1/capacity) in the table.

export interface TopEntry {
  key: string;
  /** The ranking weight (bytes, or requests): at most `error` above the true figure. */
  weight: number;
  /** Requests counted since the key was last (re)admitted. */
  count: number;
}

export class TopK {
  readonly capacity: number;
  private keys: string[] = [];
  private weights: number[] = [];
  private counts: number[] = [];
  private index = new Map<string, number>();

  constructor(capacity: number) {
    if (!(capacity >= 1)) throw new RangeError('capacity must be at least 1');
    this.capacity = Math.floor(capacity);
  }

  get size(): number {
    return this.keys.length;
  }

  add(key: string, weight: number, count = 1): void {
    const i = this.index.get(key);
    if (i !== undefined) {
      this.weights[i] = (this.weights[i] ?? 0) + weight;
      this.counts[i] = (this.counts[i] ?? 0) + count;
      this.down(i);
      return;
    }
    if (this.keys.length < this.capacity) {
      const n = this.keys.push(key) - 1;
      this.weights.push(weight);
      this.counts.push(count);
      this.index.set(key, n);
      this.up(n);
      return;
    }
    // Replace the smallest: its weight carries over as the newcomer's possible overestimate.
    const old = this.keys[0] as string;
    this.index.delete(old);
    this.keys[0] = key;
    this.index.set(key, 0);
    this.weights[0] = (this.weights[0] ?? 0) + weight;
    this.counts[0] = count;
    this.down(0);
  }

  /** Adds every entry of another sketch (or a list read back from Redis). */
  merge(entries: Iterable<TopEntry>): void {
    for (const e of entries) this.add(e.key, e.weight, e.count);
  }

  /** Entries by weight, largest first. */
  entries(limit = this.capacity): TopEntry[] {
    const out = this.keys.map((key, i) => ({
      key,
      weight: this.weights[i] ?? 0,
      count: this.counts[i] ?? 0,
    }));
    out.sort((a, b) => b.weight - a.weight || (a.key < b.key ? -1 : 1));
    return out.slice(0, limit);
  }

  private less(a: number, b: number): boolean {
    return (this.weights[a] ?? 0) < (this.weights[b] ?? 0);
  }

  private swap(a: number, b: number): void {
    const ka = this.keys[a] as string;
    const kb = this.keys[b] as string;
    this.keys[a] = kb;
    this.keys[b] = ka;
    const wa = this.weights[a] ?? 0;
    this.weights[a] = this.weights[b] ?? 0;
    this.weights[b] = wa;
    const ca = this.counts[a] ?? 0;
    this.counts[a] = this.counts[b] ?? 0;
    this.counts[b] = ca;
    this.index.set(kb, a);
    this.index.set(ka, b);
  }

  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) return;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}

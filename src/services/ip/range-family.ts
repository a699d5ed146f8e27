// One address family's ranges (IPv4: one 32-bit word an address; IPv6: four), in typed arrays that
// grow while a file loads, then sorted if needed, made disjoint and searched by bisection.

/** Compares the address at row ai of a with the one at row bi of b, `w` words each. */
function cmp(a: Uint32Array, ai: number, b: Uint32Array, bi: number, w: number): number {
  for (let k = 0; k < w; k++) {
    const x = a[ai * w + k] as number;
    const y = b[bi * w + k] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export class Family {
  private starts: Uint32Array;
  private ends: Uint32Array;
  private vals: Uint32Array;
  /** Rows held. */
  size = 0;
  private sorted = true;

  private readonly w: number;

  constructor(w: 1 | 4) {
    this.w = w;
    this.starts = new Uint32Array(1024 * w);
    this.ends = new Uint32Array(1024 * w);
    this.vals = new Uint32Array(1024);
  }

  /** Whether the range start..end (row 0 of each) is one: not backwards. */
  valid(start: Uint32Array, end: Uint32Array): boolean {
    return cmp(start, 0, end, 0, this.w) <= 0;
  }

  add(start: Uint32Array, end: Uint32Array, val: number): void {
    const { w, size: n } = this;
    if (n === this.vals.length) {
      const grow = (a: Uint32Array) => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      [this.starts, this.ends, this.vals] = [grow(this.starts), grow(this.ends), grow(this.vals)];
    }
    if (n > 0 && cmp(start, 0, this.starts, n - 1, w) < 0) this.sorted = false;
    for (let k = 0; k < w; k++) {
      this.starts[n * w + k] = start[k] as number;
      this.ends[n * w + k] = end[k] as number;
    }
    this.vals[n] = val;
    this.size = n + 1;
  }

  /**
   * Sorts by start when the file was not, then makes the ranges disjoint (bisection needs it): a
   * row overlapping the one before keeps only its part after it (the packaged ASN data has one
   * such row). Returns how many rows were cut short or dropped.
   */
  disjoint(): number {
    const { w, size: n, starts, ends, vals } = this;
    let order: Uint32Array | undefined;
    if (!this.sorted) {
      order = new Uint32Array(n);
      for (let i = 0; i < n; i++) order[i] = i;
      // Equal starts keep file order, so the first of them wins below.
      order.sort((a, b) => cmp(starts, a, starts, b, w) || a - b);
    }
    const [s, e, v] = [new Uint32Array(n * w), new Uint32Array(n * w), new Uint32Array(n)];
    let m = 0;
    let clipped = 0;
    for (let r = 0; r < n; r++) {
      const i = order ? (order[r] as number) : r;
      for (let k = 0; k < w; k++) s[m * w + k] = starts[i * w + k] as number;
      if (m > 0 && cmp(s, m, e, m - 1, w) <= 0) {
        clipped++;
        if (cmp(ends, i, e, m - 1, w) <= 0) continue;
        // Start just after the previous end: that end + 1, carried across words (it is below the
        // top address, since this row's end is above it).
        let k = w - 1;
        for (; (e[(m - 1) * w + k] as number) === 0xffffffff; k--) s[m * w + k] = 0;
        s[m * w + k] = (e[(m - 1) * w + k] as number) + 1;
        for (k--; k >= 0; k--) s[m * w + k] = e[(m - 1) * w + k] as number;
      }
      for (let k = 0; k < w; k++) e[m * w + k] = ends[i * w + k] as number;
      v[m] = vals[i] as number;
      m++;
    }
    const fit = (a: Uint32Array, len: number) => (a.length === len ? a : a.slice(0, len));
    [this.starts, this.ends, this.vals] = [fit(s, m * w), fit(e, m * w), fit(v, m)];
    this.size = m;
    return clipped;
  }

  /** The value index of the range holding the address in key[0..w), or -1. */
  find(key: Uint32Array): number {
    const w = this.w;
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(this.starts, mid, key, 0, w) <= 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && cmp(key, 0, this.ends, hi, w) <= 0 ? (this.vals[hi] as number) : -1;
  }
}

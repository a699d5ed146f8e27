// The value parts of ip-range CSV rows (what follows the two addresses), each distinct one kept
// once as bytes and decoded on lookup. Interned by hashing the row's bytes: no string per row,
// and the half-million rows of the ASN data share some 140 thousand values.

export class ValueStore {
  private bytes = Buffer.alloc(1 << 16);
  /** Value i is bytes[offs[i], offs[i + 1]). */
  private offs = new Uint32Array(1024);
  private hashes = new Uint32Array(1024);
  private count = 0;
  /** Open addressing: value index + 1, 0 for a free slot. */
  private slots = new Uint32Array(1 << 12);

  /** The index of the value b[from, to), added when new. */
  intern(b: Uint8Array, from: number, to: number): number {
    let h = 0x811c9dc5; // FNV-1a
    for (let i = from; i < to; i++) h = Math.imul(h ^ (b[i] as number), 16777619);
    h >>>= 0;
    const mask = this.slots.length - 1;
    let at = h & mask;
    for (let s = this.slots[at] as number; s !== 0; s = this.slots[at] as number) {
      if (this.hashes[s - 1] === h && this.equals(s - 1, b, from, to)) return s - 1;
      at = (at + 1) & mask;
    }
    const i = this.push(h, b, from, to);
    this.slots[at] = i + 1;
    if (this.count * 2 > this.slots.length) this.rehash();
    return i;
  }

  get(i: number): string | undefined {
    return i >= 0 && i < this.count ? this.bytes.toString('utf8', this.offs[i], this.offs[i + 1]) : undefined;
  }

  /** Drops the room kept for growth once loading is done. */
  trim(): void {
    this.bytes = Buffer.from(this.bytes.subarray(0, this.offs[this.count]));
    this.offs = this.offs.slice(0, this.count + 1);
    this.hashes = new Uint32Array(0);
    this.slots = new Uint32Array(0);
  }

  private equals(i: number, b: Uint8Array, from: number, to: number): boolean {
    const at = this.offs[i] as number;
    if ((this.offs[i + 1] as number) - at !== to - from) return false;
    for (let k = 0; k < to - from; k++) if (this.bytes[at + k] !== b[from + k]) return false;
    return true;
  }

  private push(h: number, b: Uint8Array, from: number, to: number): number {
    const i = this.count++;
    if (this.count + 1 > this.offs.length) {
      const grow = (a: Uint32Array) => {
        const c = new Uint32Array(a.length * 2);
        c.set(a);
        return c;
      };
      [this.offs, this.hashes] = [grow(this.offs), grow(this.hashes)];
    }
    const at = this.offs[i] as number;
    if (at + (to - from) > this.bytes.length) {
      const bigger = Buffer.alloc(Math.max(this.bytes.length * 2, at + (to - from)));
      this.bytes.copy(bigger);
      this.bytes = bigger;
    }
    this.bytes.set(b.subarray(from, to), at);
    this.offs[i + 1] = at + (to - from);
    this.hashes[i] = h;
    return i;
  }

  private rehash(): void {
    const slots = new Uint32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let i = 0; i < this.count; i++) {
      let at = (this.hashes[i] as number) & mask;
      while (slots[at] !== 0) at = (at + 1) & mask;
      slots[at] = i + 1;
    }
    this.slots = slots;
  }
}

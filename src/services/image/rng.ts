// A small seeded PRNG (sfc32) so artwork and random picks are reproducible from a hash.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  float(min: number, max: number): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

/** Seeds from the first 16 bytes of `bytes` (pass a hash). */
export function rngFrom(bytes: Uint8Array): Rng {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let a = v.getUint32(0) | 0;
  let b = v.getUint32(4) | 0;
  let c = v.getUint32(8) | 0;
  let d = v.getUint32(12) | 0;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  const rng: Rng = {
    next,
    float: (min, max) => min + (max - min) * next(),
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
  return rng;
}

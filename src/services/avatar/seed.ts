// Identity hashes and the deterministic randomness every generator draws from (docs/protocols/gravatar.md
// §1, §6): the bytes come from the hash only, never Math.random, so one hash always gives one picture.
import { createHash } from 'node:crypto';

export type HashKind = 'md5' | 'sha256';

/** A lower-cased 32- or 64-hex hash, or null for anything else (treated as an unknown address). */
export function parseHash(raw: string): { hex: string; kind: HashKind } | null {
  if (!/^[0-9a-f]{32}$|^[0-9a-f]{64}$/i.test(raw)) return null;
  const hex = raw.toLowerCase();
  return { hex, kind: hex.length === 32 ? 'md5' : 'sha256' };
}

/** The hashes a client computes from an address: trimmed and lower-cased first. */
export function emailHashes(email: string): { md5: string; sha256: string } {
  const e = email.trim().toLowerCase();
  return {
    md5: createHash('md5').update(e).digest('hex'),
    sha256: createHash('sha256').update(e).digest('hex'),
  };
}

/** A byte stream derived from the hash only: SHA-256 of its bytes, then blocks chained from that. */
export class Seed {
  private buf: Buffer;
  private pos = 0;

  readonly text: string;
  constructor(text: string) {
    this.text = text;
    // Mixed through SHA-256 so hand-made hashes (000...1) still get varied pictures; anything that
    // is not a hash (or no hash at all) gets a stable picture of its own.
    const valid = parseHash(text);
    const input = valid ? Buffer.from(valid.hex, 'hex') : Buffer.from(`x:${text}`);
    this.buf = createHash('sha256').update(input).digest();
  }

  /** The next byte, 0..255. */
  byte(): number {
    if (this.pos >= this.buf.length) {
      const next = createHash('sha256').update(this.buf.subarray(-32)).update('more').digest();
      this.buf = Buffer.concat([this.buf, next]);
    }
    return this.buf[this.pos++]!;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return n <= 1 ? 0 : ((this.byte() << 8) | this.byte()) % n;
  }

  /** A float in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + (((this.byte() << 8) | this.byte()) / 65535) * (hi - lo);
  }

  bool(): boolean {
    return (this.byte() & 1) === 1;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** The next `n` bytes, for generators that read bits directly. */
  bytes(n: number): number[] {
    return Array.from({ length: n }, () => this.byte());
  }
}

export type Rgb = [number, number, number];

/** HSL (h in degrees, s and l in 0..1) to 8-bit RGB. */
export function hsl(h: number, s: number, l: number): Rgb {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

export function hex(c: Rgb): string {
  return `#${c.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

/** A pleasant, readable colour for white text or as a foreground on light grey (hue from the seed). */
export function seedColour(seed: Seed, lightness = 0.46): Rgb {
  const hue = seed.int(360);
  return hsl(hue, seed.range(0.45, 0.7), lightness);
}

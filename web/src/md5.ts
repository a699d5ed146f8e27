// MD5 (RFC 1321) for Gravatar hashes: the hash other sites put in avatar URLs, and browsers have no
// MD5 of their own (crypto.subtle has only SHA, and only in secure contexts).

const S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const K = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

function shift(i: number): number {
  return S[(i >> 4) * 4 + (i % 4)] ?? 0;
}

export function md5Hex(input: Uint8Array): string {
  const len = input.length;
  const total = ((len + 8) >> 6) * 64 + 64;
  const buf = new Uint8Array(total);
  buf.set(input);
  buf[len] = 0x80;
  const view = new DataView(buf.buffer);
  view.setUint32(total - 8, (len * 8) >>> 0, true);
  view.setUint32(total - 4, Math.floor(len / 0x20000000), true);

  let a0 = 0x67452301;
  let b0 = 0xefcdab89;
  let c0 = 0x98badcfe;
  let d0 = 0x10325476;
  const m = new Array<number>(16);
  for (let off = 0; off < total; off += 64) {
    for (let j = 0; j < 16; j++) m[j] = view.getUint32(off + j * 4, true);
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number;
      let g: number;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const sum = (a + f + (K[i] ?? 0) + (m[g] ?? 0)) >>> 0;
      const s = shift(i);
      a = d;
      d = c;
      c = b;
      b = (b + ((sum << s) | (sum >>> (32 - s)))) >>> 0;
    }
    a0 = (a0 + a) >>> 0;
    b0 = (b0 + b) >>> 0;
    c0 = (c0 + c) >>> 0;
    d0 = (d0 + d) >>> 0;
  }
  const out = new DataView(new ArrayBuffer(16));
  [a0, b0, c0, d0].forEach((w, i) => {
    out.setUint32(i * 4, w, true);
  });
  return [...new Uint8Array(out.buffer)].map((x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * The hashes of an email as Gravatar-style services take them (of the trimmed, lower-cased address):
 * MD5, which WordPress, GitLab, Gitea and most libraries send, and SHA-256 where the browser can
 * compute it (crypto.subtle exists only in secure contexts). devutil answers both.
 */
export async function emailHashes(email: string): Promise<{ md5: string; sha256: string | null }> {
  const bytes = new TextEncoder().encode(email.trim().toLowerCase());
  const subtle = globalThis.crypto?.subtle;
  let sha256: string | null = null;
  if (subtle) {
    const d = new Uint8Array(await subtle.digest('SHA-256', bytes));
    sha256 = [...d].map((x) => x.toString(16).padStart(2, '0')).join('');
  }
  return { md5: md5Hex(bytes), sha256 };
}

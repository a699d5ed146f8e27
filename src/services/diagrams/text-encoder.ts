// PlantUML's text encoding (docs/protocols/plantuml-server.md §3): raw DEFLATE, then base64 with PlantUML's
// own alphabet; and Kroki's (zlib, URL-safe base64) for the editor's Kroki links. Web-platform APIs only,
// so the server (encoding.ts) and the page bundle the same module.

/** 0-9 A-Z a-z - _ in that order: NOT RFC 4648 (value 0 is '0'), no '=' padding. */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

/** PlantUML base64 of raw bytes; the last group is padded with zero bits like the reference encoder. */
export function encode64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const b1 = bytes[i] ?? 0;
    const b2 = bytes[i + 1] ?? 0;
    const b3 = bytes[i + 2] ?? 0;
    out +=
      ALPHABET[b1 >> 2]! +
      ALPHABET[((b1 & 0x3) << 4) | (b2 >> 4)]! +
      ALPHABET[((b2 & 0xf) << 2) | (b3 >> 6)]! +
      ALPHABET[b3 & 0x3f]!;
  }
  return out;
}

/**
 * The inverse of encode64; a length that is not a multiple of 4 is padded with '0' (value 0), as
 * PlantUML does. Null on a character outside the alphabet.
 */
export function decode64(s: string): Uint8Array | null {
  const groups = Math.ceil(s.length / 4);
  const out = new Uint8Array(groups * 3);
  let o = 0;
  for (let i = 0; i < groups * 4; i += 4) {
    const c: number[] = [];
    for (let k = 0; k < 4; k++) {
      const code = i + k < s.length ? s.charCodeAt(i + k) : 0x30; // '0'
      const v = code < 128 ? VALUE[code]! : -1;
      if (v < 0) return null;
      c.push(v);
    }
    const [c1, c2, c3, c4] = c as [number, number, number, number];
    out[o++] = (c1 << 2) | (c2 >> 4);
    out[o++] = ((c2 & 0xf) << 4) | (c3 >> 2);
    out[o++] = ((c3 & 0x3) << 6) | c4;
  }
  return out;
}

/** Raw DEFLATE through the platform's CompressionStream (browsers, and Node 20.12+). */
export async function deflateRaw(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([new Uint8Array(bytes)]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The text as the page's editor encodes it: trimmed UTF-8, raw DEFLATE, PlantUML base64. */
export async function encodePlantUml(text: string): Promise<string> {
  return encode64(await deflateRaw(new TextEncoder().encode(text.trim())));
}

/** Kroki's encoding of a diagram: the UTF-8 text zlib-deflated, in URL-safe base64 without padding. */
export async function encodeKroki(text: string): Promise<string> {
  const stream = new Blob([new TextEncoder().encode(text)])
    .stream()
    .pipeThrough(new CompressionStream('deflate'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let bin = '';
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

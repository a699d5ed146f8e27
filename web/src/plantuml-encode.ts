// PlantUML's text encoding (plantuml-server digest §3): raw DEFLATE, then base64 with PlantUML's own
// alphabet 0-9 A-Z a-z - _ (not RFC 4648), no '=' padding. Shared by the browser and the server.

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';

/** PlantUML base64 of raw bytes; the last group is padded with zero bits like the reference encoder. */
export function encode64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const b1 = bytes[i] ?? 0;
    const b2 = bytes[i + 1] ?? 0;
    const b3 = bytes[i + 2] ?? 0;
    out += ALPHABET[b1 >> 2];
    out += ALPHABET[((b1 & 0x3) << 4) | (b2 >> 4)];
    out += ALPHABET[((b2 & 0xf) << 2) | (b3 >> 6)];
    out += ALPHABET[b3 & 0x3f];
  }
  return out;
}

/** The inverse of encode64 (tests use it to prove the browser's URLs decode to the typed text). */
export function decode64(s: string): Uint8Array {
  const vals: number[] = [];
  for (const c of s) {
    const v = ALPHABET.indexOf(c);
    if (v === -1) throw new Error(`not a PlantUML base64 character: ${c}`);
    vals.push(v);
  }
  const out: number[] = [];
  for (let i = 0; i < vals.length; i += 4) {
    const [c1 = 0, c2 = 0, c3 = 0, c4 = 0] = vals.slice(i, i + 4);
    out.push(((c1 << 2) | (c2 >> 4)) & 0xff, ((c2 << 4) | (c3 >> 2)) & 0xff, ((c3 << 6) | c4) & 0xff);
  }
  return Uint8Array.from(out);
}

/** Raw DEFLATE through the platform's CompressionStream (browsers; Node 20 has it too). */
export async function deflateRaw(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([new Uint8Array(bytes)]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The text as editors encode it: trimmed UTF-8, raw DEFLATE, PlantUML base64. */
export async function encodePlantUml(text: string): Promise<string> {
  return encode64(await deflateRaw(new TextEncoder().encode(text.trim())));
}

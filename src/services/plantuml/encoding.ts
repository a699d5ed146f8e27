// PlantUML's text encoding (digest section 3): raw DEFLATE + PlantUML's own base64 alphabet, `~h`
// hex, Kroki's zlib + base64url as a fallback. Pure functions, no framework.
import { constants, deflateRawSync, inflateRawSync, inflateSync } from 'node:zlib';

/** 0-9 A-Z a-z - _ in that order: NOT RFC 4648 (value 0 is '0'). */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

export function encode64(buf: Uint8Array): string {
  let out = '';
  for (let i = 0; i < buf.length; i += 3) {
    const b1 = buf[i] ?? 0;
    const b2 = buf[i + 1] ?? 0;
    const b3 = buf[i + 2] ?? 0;
    out +=
      ALPHABET[b1 >> 2]! +
      ALPHABET[((b1 & 0x3) << 4) | (b2 >> 4)]! +
      ALPHABET[((b2 & 0xf) << 2) | (b3 >> 6)]! +
      ALPHABET[b3 & 0x3f]!;
  }
  return out;
}

/** Decodes PlantUML base64; a length that is not a multiple of 4 is padded with '0'. Null on a bad char. */
export function decode64(s: string): Buffer | null {
  const padded = s.length % 4 === 0 ? s : s + '0'.repeat(4 - (s.length % 4));
  const out = Buffer.alloc((padded.length / 4) * 3);
  let o = 0;
  for (let i = 0; i < padded.length; i += 4) {
    const c = [0, 1, 2, 3].map((k) => {
      const code = padded.charCodeAt(i + k);
      return code < 128 ? VALUE[code]! : -1;
    });
    if (c.some((v) => v < 0)) return null;
    const [c1, c2, c3, c4] = c as [number, number, number, number];
    out[o++] = (c1 << 2) | (c2 >> 4);
    out[o++] = ((c2 & 0xf) << 4) | (c3 >> 2);
    out[o++] = ((c3 & 0x3) << 6) | c4;
  }
  return out;
}

export class DecodeError extends Error {}

/** Inflate that tolerates the zero-padded tail, truncation and bytes after the end of the stream. */
function inflateTolerant(buf: Buffer, maxBytes: number, zlibHeader: boolean): string {
  const opts = { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: maxBytes };
  const out = zlibHeader ? inflateSync(buf, opts) : inflateRawSync(buf, opts);
  return out.toString('utf8');
}

function fromHex(s: string): string {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(s)) throw new DecodeError('bad ~h hex encoding');
  return Buffer.from(s, 'hex').toString('utf8');
}

function fromKroki(s: string, maxBytes: number): string {
  // Kroki: zlib with header + RFC 4648 url-safe base64, '=' optional.
  const b = s.replace(/=+$/, '');
  if (!/^[A-Za-z0-9_-]*$/.test(b)) throw new DecodeError('not base64url');
  return inflateTolerant(Buffer.from(b, 'base64url'), maxBytes, true);
}

/**
 * Decodes one URL segment (already percent-decoded) into diagram text. Tries PlantUML's
 * encoding first, then Kroki's, as Kroki itself does (digest section 3).
 */
export function decodeDiagram(segment: string, maxBytes: number): string {
  let s = segment.trim();
  if (s.startsWith('~h')) return checkSize(fromHex(s.slice(2)), maxBytes);
  if (s.startsWith('~1'))
    throw new DecodeError('the old ~1 (Huffman) encoding is not supported; use DEFLATE');
  if (s.startsWith('~0')) s = s.slice(2);
  const raw = decode64(s);
  if (raw) {
    try {
      const text = inflateTolerant(raw, maxBytes, false);
      if (text.length > 0 && !text.includes('\uFFFD')) return text;
    } catch (err) {
      if (isTooBig(err)) throw new DecodeError('diagram source is too large');
    }
  }
  try {
    const text = fromKroki(s, maxBytes);
    if (text.length > 0) return text;
  } catch (err) {
    if (isTooBig(err)) throw new DecodeError('diagram source is too large');
  }
  throw new DecodeError('cannot decode the diagram: expected PlantUML DEFLATE encoding or ~h hex');
}

function isTooBig(err: unknown): boolean {
  return err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
}

function checkSize(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) > maxBytes) throw new DecodeError('diagram source is too large');
  return text;
}

/** The server's encoder (/coder, editor links): trim, drop @startuml/@enduml lines, DEFLATE 9. */
export function encodeDiagram(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0]?.trimStart().startsWith('@startuml')) lines.shift();
  if (lines.at(-1)?.trimStart().startsWith('@enduml')) lines.pop();
  return encode64(deflateRawSync(Buffer.from(lines.join('\n'), 'utf8'), { level: 9 }));
}

/** Bare text gets wrapped like the server does; CRLF becomes LF (POST bodies, digest section 1). */
export function normalizeSource(text: string): string {
  const t = text.replace(/\r\n?/g, '\n');
  return t.trimStart().startsWith('@start') ? t : `@startuml\n${t}\n@enduml`;
}

// PlantUML's text encoding (docs/protocols/plantuml-server.md §3): raw DEFLATE + PlantUML's own base64
// alphabet, `~h` hex, Kroki's zlib + base64url as a fallback. Pure functions, no framework.
import { constants, deflateRawSync, deflateSync, inflateRawSync, inflateSync } from 'node:zlib';
import { decode64, encode64 } from '../text-encoder.ts';
import { c4Includes } from './c4.ts';

// The alphabet lives in text-encoder.ts, the one module the page bundles too.
export { decode64, encode64 };

export class DecodeError extends Error {}

/** Inflate that tolerates the zero-padded tail, truncation and bytes after the end of the stream. */
function inflateTolerant(buf: Uint8Array, maxBytes: number, zlibHeader: boolean): string {
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
 * encoding first, then Kroki's, as Kroki itself does (docs/protocols/plantuml-server.md §3).
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

/** Kroki's encoding first (zlib + base64url), then PlantUML's, for the other diagram languages. */
export function decodeKroki(segment: string, maxBytes: number): string {
  const s = segment.trim();
  try {
    const text = fromKroki(s, maxBytes);
    if (text.length > 0) return text;
  } catch (err) {
    if (isTooBig(err)) throw new DecodeError('diagram source is too large');
  }
  return decodeDiagram(s, maxBytes);
}

/** The server's encoder (/coder, editor links): trim, drop @startuml/@enduml lines, DEFLATE 9. */
export function encodeDiagram(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0]?.trimStart().startsWith('@startuml')) lines.shift();
  if (lines.at(-1)?.trimStart().startsWith('@enduml')) lines.pop();
  return encode64(deflateRawSync(Buffer.from(lines.join('\n'), 'utf8'), { level: 9 }));
}

/** Kroki's encoding (zlib, URL-safe base64 without padding); the page's script has it too (text-encoder.ts). */
export function encodeKrokiDiagram(text: string): string {
  return deflateSync(Buffer.from(text, 'utf8'), { level: 9 }).toString('base64url');
}

/**
 * Bare text gets wrapped like the server does; CRLF becomes LF (POST bodies,
 * docs/protocols/plantuml-server.md §1); C4-PlantUML includes come from the standard library (c4.ts).
 */
export function normalizeSource(text: string): string {
  const t = c4Includes(text.replace(/\r\n?/g, '\n'));
  return t.trimStart().startsWith('@start') ? t : `@startuml\n${t}\n@enduml`;
}

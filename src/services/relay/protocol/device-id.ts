// Syncthing device IDs (docs/protocols/syncthing-relay.md §1): SHA-256 of the certificate DER, base32 with
// a "luhn32" check character per 13-char group, printed as 8 dash-separated groups of 7.
import { createHash } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function unbase32(s: string): Buffer | null {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of s) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return null;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** Syncthing's luhn32 variant: factors 1,2,1,2... and floor(a/32) + a%32 addends. */
export function luhn32(group: string): string {
  let factor = 1;
  let sum = 0;
  for (const ch of group) {
    const a = factor * ALPHABET.indexOf(ch);
    sum += Math.floor(a / 32) + (a % 32);
    factor = factor === 1 ? 2 : 1;
  }
  return ALPHABET[(32 - (sum % 32)) % 32] as string;
}

/** Text form of a raw 32-byte ID. The all-zero ID prints as the empty string. */
export function formatDeviceId(raw: Buffer): string {
  if (raw.length !== 32) throw new Error('device ID must be 32 bytes');
  if (raw.every((b) => b === 0)) return '';
  const b = base32(raw); // 52 chars, no padding
  let withCheck = '';
  for (let i = 0; i < 4; i++) {
    const g = b.slice(i * 13, i * 13 + 13);
    withCheck += g + luhn32(g);
  }
  return (withCheck.match(/.{7}/g) ?? []).join('-');
}

/** Parses what clients accept (typo mapping, with or without check chars); null when invalid. */
export function parseDeviceId(text: string): Buffer | null {
  const s = text
    .replace(/=+$/, '')
    .toUpperCase()
    .replace(/[-\s]/g, '')
    .replace(/0/g, 'O')
    .replace(/1/g, 'I')
    .replace(/8/g, 'B');
  let plain: string;
  if (s.length === 56) {
    plain = '';
    for (let i = 0; i < 4; i++) {
      const g = s.slice(i * 14, i * 14 + 13);
      if (luhn32(g) !== s[i * 14 + 13]) return null;
      plain += g;
    }
  } else if (s.length === 52) {
    plain = s;
  } else {
    return null;
  }
  const raw = unbase32(plain);
  return raw && raw.length === 32 ? raw : null;
}

/** The raw device ID of a certificate: SHA-256 over its DER bytes. */
export function deviceIdOf(certDer: Buffer): Buffer {
  return createHash('sha256').update(certDer).digest();
}

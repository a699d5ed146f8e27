// Keys, file names and the Content-Disposition header: the exact key grammar of the issue, and
// file names made safe (no paths, no control characters) while keeping their Unicode.

/** 1-128 of `A-Z a-z 0-9 . _ -`, not starting with "."; case-sensitive. */
export const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

export function validKey(key: string): boolean {
  return KEY.test(key);
}

const MAX_NAME_BYTES = 200;

/**
 * The last path component of a client-supplied name, without control or bidi-override characters,
 * trimmed to 200 UTF-8 bytes (keeping the extension). Empty or dot-only names fall back to the key.
 */
export function sanitizeFilename(raw: string | undefined, fallback: string): string {
  let name = (raw ?? '').normalize('NFC');
  name = name.split(/[/\\]/).pop() ?? '';
  // C0/C1 controls, DEL, bidi overrides and isolates (used to disguise extensions), BOM.
  name = name.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\ufeff]/g, '');
  name = name.replace(/^[\s.]+/, '').trim();
  if (!name) return fallback;
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
    let stem = [...name.slice(0, name.length - ext.length)];
    while (stem.length && Buffer.byteLength(stem.join('') + ext) > MAX_NAME_BYTES) stem = stem.slice(0, -1);
    name = stem.join('') + ext;
  }
  return name;
}

/** RFC 5987 value chars that need no escaping; encodeURIComponent leaves a few more, escape them. */
function rfc5987(s: string): string {
  return encodeURIComponent(s).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `attachment` with `filename*=UTF-8''...` (RFC 6266) for non-ASCII names, which browsers and
 * wget --content-disposition use, and a `filename` fallback carrying the same name as raw UTF-8
 * bytes: curl -OJ ignores `filename*` and saves those bytes verbatim, so it keeps the Unicode name.
 */
export function contentDisposition(filename: string): string {
  const safe = filename.replace(/[\u0000-\u001f\u007f"\\]/g, '_');
  if (/^[\x20-\x7e]*$/.test(safe) && !safe.includes('%')) return `attachment; filename="${safe}"`;
  // Node writes header strings as latin1: this string's code units are the name's UTF-8 bytes.
  const utf8 = Buffer.from(safe, 'utf8').toString('latin1');
  return `attachment; filename="${utf8}"; filename*=UTF-8''${rfc5987(filename)}`;
}

/** Space saved as the API reports it: two decimals and a percent sign, "0.00%" when nothing was saved. */
export function ratio(original: number, stored: number): string {
  if (original <= 0 || stored >= original) return '0.00%';
  return `${((1 - stored / original) * 100).toFixed(2)}%`;
}

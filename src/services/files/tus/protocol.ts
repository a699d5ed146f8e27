// tus 1.0 wire details, framework-free: the headers every answer carries, Upload-Metadata parsing,
// offsets, and the CORS headers browsers (tus-js-client, Uppy) need to read the tus headers.
import { badRequest } from '../../../infra/http/errors.ts';

export const TUS_VERSION = '1.0.0';
/** creation-with-upload and concatenation are not offered: clients then use plain POST + PATCH. */
export const TUS_EXTENSIONS = 'creation,termination,expiration';
export const PATCH_TYPE = 'application/offset+octet-stream';
/** Upload-Metadata longer than this is refused: it is echoed on every HEAD. */
export const MAX_METADATA = 4096;
/** Upload ids: 32 lowercase hex characters (128 random bits). */
export const UPLOAD_ID = /^[0-9a-f]{32}$/;

const REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Origin',
  'X-Requested-With',
  'X-Request-ID',
  'X-HTTP-Method-Override',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Offset',
  'Upload-Metadata',
  'Upload-Defer-Length',
  'Upload-Concat',
  'X-Owner-Token',
  'Max-Downloads',
  'Max-Days',
];
const EXPOSED = [
  'Location',
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Metadata',
  'Upload-Expires',
  'X-Owner-Token',
  'X-Upload-Result',
  'X-Request-ID',
];

/** On every answer: uploads come from pages on any origin (no cookies are involved). */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': EXPOSED.join(', '),
};

/** The preflight answer (OPTIONS with Access-Control-Request-Method). */
export const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'POST, GET, HEAD, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': REQUEST_HEADERS.join(', '),
  'access-control-max-age': '86400',
};

/** A non-negative integer header (Upload-Length, Upload-Offset), or null when absent. */
export function offsetHeader(name: string, raw: unknown): number | null {
  if (raw === undefined) return null;
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!/^[0-9]{1,15}$/.test(text))
    throw badRequest(`${name} must be a non-negative integer`, 'BAD_TUS_HEADER');
  return Number(text);
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const META_KEY = /^[\x21-\x2b\x2d-\x7e]{1,64}$/;

/**
 * Upload-Metadata: comma-separated `key base64value` pairs (tus 1.0 "Upload-Metadata"); the value
 * may be absent. Keys are unique and must not contain spaces or commas. Returned in a Map so that
 * keys like "__proto__" are plain entries.
 */
export function parseMetadata(raw: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (raw === undefined) return out;
  if (typeof raw !== 'string') throw badRequest('give Upload-Metadata once', 'BAD_METADATA');
  if (raw.length > MAX_METADATA)
    throw badRequest(`Upload-Metadata is longer than ${MAX_METADATA} characters`, 'BAD_METADATA');
  if (!raw.trim()) return out;
  for (const pair of raw.split(',')) {
    const [key = '', value, extra] = pair.trim().split(' ');
    if (!META_KEY.test(key) || extra !== undefined)
      throw badRequest('Upload-Metadata must be "key base64value" pairs separated by commas', 'BAD_METADATA');
    if (out.has(key)) throw badRequest(`Upload-Metadata names ${key} twice`, 'BAD_METADATA');
    if (value !== undefined && !B64.test(value))
      throw badRequest(`Upload-Metadata value of ${key} is not base64`, 'BAD_METADATA');
    out.set(key, value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8'));
  }
  return out;
}

/** A key from a file name the way the home page suggests one: unsupported characters become '-'. */
export function keyFromName(name: string): string {
  const k = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^\.+/, '')
    .slice(0, 128);
  return k || 'file';
}

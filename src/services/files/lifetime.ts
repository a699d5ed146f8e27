// File lifetimes (transfer.sh's Max-Downloads / Max-Days): the request values checked as hostile
// input and the blob metadata that carries them (so every instance enforces them). The download
// counts are in download-counter.ts, the rule in downloads.ts.
import { randomBytes } from 'node:crypto';
import { badRequest } from '../../infra/http/errors.ts';

export const DAY_MS = 86_400_000;

export interface Limits {
  maxDownloads?: number;
  maxDays?: number;
}

/** The limits of a stored file, read back from its metadata. */
export interface Lifetime {
  /** Names this version's download counter: a replaced file starts counting afresh. */
  id: string;
  maxDownloads: number | null;
  maxDays: number | null;
  /** Epoch ms after which the file is gone (Max-Days), or null. */
  expiresAt: number | null;
}

/** What the upload result reports (data.lifetime), only for an upload that set a limit. */
export interface LifetimeResult {
  max_downloads: number | null;
  max_days: number | null;
  expires_at: string | null;
}

const WHOLE = /^[0-9]{1,12}$/;
// Days may be fractional (Max-Days: 0.5 is twelve hours); six decimals reach about a tenth of a second.
const DAYS = /^[0-9]{1,6}(?:\.[0-9]{1,6})?$/;

/** One limit from a header (string, or an array when repeated) or a form field; undefined when absent. */
function parseOne(name: string, raw: unknown, max: number, fraction: boolean): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw badRequest(`give ${name} once`, 'BAD_LIMIT');
  const text = raw.trim();
  const n = (fraction ? DAYS : WHOLE).test(text) ? Number(text) : Number.NaN;
  const kind = fraction ? 'a number of days' : 'a whole number';
  if (!Number.isFinite(n) || n <= 0 || n > max)
    throw badRequest(`${name} must be ${kind} from ${fraction ? 'above 0' : '1'} to ${max}`, 'BAD_LIMIT');
  return n;
}

export interface LimitCaps {
  maxDownloadsLimit: number;
  maxDaysLimit: number;
}

/** Form field names (compared lowercased) that mean the same as each header. */
const FIELD_NAMES = {
  'max-downloads': ['max-downloads', 'max_downloads'],
  'max-days': ['max-days', 'max_days'],
} as const;

/**
 * The limits asked for by request headers and/or form fields (or tus Upload-Metadata entries).
 * `fields` maps lowercased names to every value given; a name given twice, or a header and a field
 * that disagree, is 400.
 */
export function readLimits(
  headers: Record<string, string | string[] | undefined>,
  fields: ReadonlyMap<string, readonly string[]>,
  caps: LimitCaps,
): Limits {
  const pick = (header: keyof typeof FIELD_NAMES): unknown => {
    const given: unknown[] = [];
    if (headers[header] !== undefined) given.push(headers[header]);
    for (const f of FIELD_NAMES[header]) for (const v of fields.get(f) ?? []) given.push(v);
    if (given.length > 1 && new Set(given.map((v) => String(v).trim())).size > 1)
      throw badRequest(`${header} was given more than once with different values`, 'BAD_LIMIT');
    return given[0];
  };
  const out: Limits = {};
  const dl = parseOne('Max-Downloads', pick('max-downloads'), caps.maxDownloadsLimit, false);
  const days = parseOne('Max-Days', pick('max-days'), caps.maxDaysLimit, true);
  if (dl !== undefined) out.maxDownloads = dl;
  if (days !== undefined) out.maxDays = days;
  return out;
}

/** Blob metadata for the limits (empty when none): it travels with the object to every instance. */
export function lifetimeMeta(l: Limits, now: number): Record<string, string> {
  if (l.maxDownloads === undefined && l.maxDays === undefined) return {};
  const m: Record<string, string> = { 'life-id': randomBytes(9).toString('base64url') };
  if (l.maxDownloads !== undefined) m['max-downloads'] = String(l.maxDownloads);
  if (l.maxDays !== undefined) {
    m['max-days'] = String(l.maxDays);
    m['expires'] = new Date(now + Math.round(l.maxDays * DAY_MS)).toISOString();
  }
  return m;
}

/** The limits in a blob's metadata, or null when it has none (or they do not parse). */
export function lifetimeOf(meta: Readonly<Record<string, string>>): Lifetime | null {
  const id = meta['life-id'];
  if (!id) return null;
  const num = (v: string | undefined) => (v !== undefined && Number.isFinite(Number(v)) ? Number(v) : null);
  const expires = meta['expires'] !== undefined ? Date.parse(meta['expires']) : Number.NaN;
  return {
    id,
    maxDownloads: num(meta['max-downloads']),
    maxDays: num(meta['max-days']),
    expiresAt: Number.isFinite(expires) ? expires : null,
  };
}

export function lifetimeResult(l: Lifetime): LifetimeResult {
  return {
    max_downloads: l.maxDownloads,
    max_days: l.maxDays,
    expires_at: l.expiresAt === null ? null : new Date(l.expiresAt).toISOString(),
  };
}

// Reads a Gravatar image URL (docs/protocols/gravatar.md §2, §3): the hash and extension from the path,
// then the query with its long/short aliases (long wins). Never throws: bad values fall back like
// Gravatar's do.

import { type DicebearStyle, dicebearStyle } from './gen/dicebear.ts';
import { deriveInitials } from './gen/font.ts';
import { type GeneratorName, isGenerator } from './gen/names.ts';
import type { Format } from './render.ts';
import { type HashKind, parseHash } from './seed.ts';

export const RATINGS = ['g', 'pg', 'r', 'x'] as const;
export type Rating = (typeof RATINGS)[number];

export type DefaultChoice =
  | { kind: 'generate'; name: GeneratorName }
  | { kind: 'dicebear'; style: DicebearStyle }
  | { kind: '404' }
  | { kind: 'url'; url: string };

export interface AvatarQuery {
  /** The lower-cased hash when the path holds a 32/64-hex one; null = unknown address. */
  hash: { hex: string; kind: HashKind } | null;
  /** What the generators are seeded with: the hash, or the raw path text for anything else. */
  seedText: string;
  format: Format;
  size: number;
  default: DefaultChoice;
  /** The configured default generator, for an unusable d=<url>. */
  fallback: GeneratorName;
  force: boolean;
  rating: Rating;
  initials: string;
  /** False for ivatar's gravatarproxy=n: skip the upstream mirror. */
  mirror: boolean;
}

export interface QueryLimits {
  maxSize: number;
  fallback: GeneratorName;
}

const EXT: Record<string, Format> = { jpg: 'jpeg', jpeg: 'jpeg', png: 'png', gif: 'gif', webp: 'webp' };

/** `0bc8...46.jpg` -> hash text and format; unknown extensions stay part of the (invalid) hash. */
export function parseFile(file: string): { hashText: string; format: Format } {
  const m = /^(.*)\.([a-z]+)$/i.exec(file);
  const ext = m?.[2]?.toLowerCase() ?? '';
  // Own keys only: `.constructor` or `.__proto__` is an unknown extension, not Object's members.
  const fmt = Object.hasOwn(EXT, ext) ? EXT[ext] : undefined;
  return m && fmt ? { hashText: m[1]!, format: fmt } : { hashText: file, format: 'png' };
}

type Query = Record<string, unknown>;

function param(q: Query, long: string, short?: string): string | undefined {
  for (const k of short ? [long, short] : [long]) {
    const v = q[k];
    const s = Array.isArray(v) ? v[0] : v;
    if (typeof s === 'string' && s !== '') return s;
  }
  return undefined;
}

/** s/size: whole numbers only; 0 or junk gives the default 80, too large clamps to the maximum. */
export function parseSize(raw: string | undefined, max: number): number {
  if (raw === undefined || !/^\+?\d{1,12}$/.test(raw.trim())) return 80;
  const n = Number(raw.trim());
  return n < 1 ? 80 : Math.min(n, max);
}

export function parseDefault(raw: string | undefined, fallback: GeneratorName): DefaultChoice {
  if (raw === undefined) return { kind: 'generate', name: fallback };
  const d = raw.trim();
  if (/^https?:\/\//i.test(d)) return { kind: 'url', url: d };
  const k = d.toLowerCase();
  if (k === '404') return { kind: '404' };
  if (k === 'mm' || k === 'mystery' || k === 'mysteryman') return { kind: 'generate', name: 'mp' };
  const style = dicebearStyle(k);
  if (style) return { kind: 'dicebear', style };
  // Unknown keywords are treated as absent (docs/protocols/gravatar.md §4).
  return { kind: 'generate', name: isGenerator(k) ? k : fallback };
}

export function parseQuery(hashText: string, format: Format, q: Query, lim: QueryLimits): AvatarQuery {
  const hash = parseHash(hashText);
  const r = param(q, 'rating', 'r')?.toLowerCase();
  const force = param(q, 'forcedefault', 'f')?.toLowerCase();
  return {
    hash,
    seedText: hash ? hash.hex : hashText.toLowerCase().slice(0, 256),
    format,
    size: parseSize(param(q, 'size', 's'), lim.maxSize),
    default: parseDefault(param(q, 'default', 'd'), lim.fallback),
    fallback: lim.fallback,
    force: force === 'y' || force === 'yes' || force === 'true' || force === '1',
    rating: RATINGS.includes(r as Rating) ? (r as Rating) : 'g',
    initials: deriveInitials(param(q, 'initials')?.slice(0, 64), param(q, 'name')?.slice(0, 256)),
    mirror: param(q, 'gravatarproxy')?.toLowerCase() !== 'n',
  };
}

/** True when an image rated `image` may be shown to a request allowing up to `allowed`. */
export function ratingAllows(allowed: Rating, image: Rating): boolean {
  return RATINGS.indexOf(image) <= RATINGS.indexOf(allowed);
}

// Query validation and output geometry. Strict on purpose: 0, negatives, decimals, repeats and
// sizes past the configured caps are refused (400) rather than guessed at.

export type Format = 'webp' | 'jpeg' | 'png' | 'avif';
export const FORMATS: readonly Format[] = ['webp', 'jpeg', 'png', 'avif'];
export const CONTENT_TYPES: Record<Format, string> = {
  webp: 'image/webp',
  jpeg: 'image/jpeg',
  png: 'image/png',
  avif: 'image/avif',
};
export const EXTENSIONS: Record<Format, string> = { webp: 'webp', jpeg: 'jpg', png: 'png', avif: 'avif' };

export interface ImageOptions {
  id: string | null;
  /** A subdirectory of the image directory to pick from (source-dir.ts); null = any image. */
  category: string | null;
  /** As asked; null = follow the source's proportions (or the default size when both are null). */
  width: number | null;
  height: number | null;
  grayscale: boolean;
  /** 0 = none, else Gaussian sigma 1..10. */
  blur: number;
  format: Format;
}

export interface Limits {
  defaultWidth: number;
  defaultHeight: number;
  maxWidth: number;
  maxHeight: number;
  maxPixels: number;
}

export class ParamError extends Error {}

const MAX_ID = 200;
/** NAME_MAX: no directory name is longer, so a longer category cannot exist. */
const MAX_CATEGORY = 255;
const FORMAT_ALIASES: Record<string, Format> = {
  jpg: 'jpeg',
  webp: 'webp',
  jpeg: 'jpeg',
  png: 'png',
  avif: 'avif',
};

/** A parameter given at most once (a repeat is refused). */
export function one(q: Record<string, unknown>, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ParamError(`${name} must be given once`);
  return v;
}

function side(q: Record<string, unknown>, name: 'width' | 'height', max: number): number | null {
  const v = one(q, name);
  if (v === undefined) return null;
  if (!/^\d{1,6}$/.test(v)) throw new ParamError(`${name} must be a whole number from 1 to ${max}`);
  const n = Number(v);
  if (n < 1 || n > max) throw new ParamError(`${name} must be a whole number from 1 to ${max}`);
  return n;
}

/**
 * The `category` parameter: one directory name, or null when absent. Names that could not be a
 * single directory entry (empty, `.`, `..`, a separator, control characters, too long) are refused
 * here; any other name is only ever a key looked up among the scanned directories, never a path.
 */
export function parseCategory(q: Record<string, unknown>): string | null {
  const c = one(q, 'category');
  if (c === undefined) return null;
  if (
    c.length === 0 ||
    c.length > MAX_CATEGORY ||
    c === '.' ||
    c === '..' ||
    /[/\\\u0000-\u001f\u007f]/.test(c)
  )
    throw new ParamError(
      `category must be the name of one subdirectory (1 to ${MAX_CATEGORY} characters, no slashes)`,
    );
  return c;
}

/** Parses the query of GET /rest/api/v1/image; unknown parameters (cache busters) are ignored. */
export function parseQuery(q: Record<string, unknown>, limits: Limits): ImageOptions {
  const id = one(q, 'id');
  if (id !== undefined && (id.length === 0 || id.length > MAX_ID || /[\u0000-\u001f\u007f]/.test(id)))
    throw new ParamError(`id must be 1 to ${MAX_ID} printable characters`);
  const width = side(q, 'width', limits.maxWidth);
  const height = side(q, 'height', limits.maxHeight);
  if (width !== null && height !== null && width * height > limits.maxPixels)
    throw new ParamError(`width x height must not exceed ${limits.maxPixels} pixels`);
  const g = one(q, 'grayscale');
  const grayscale = g !== undefined && !['0', 'false', 'no', 'off'].includes(g.toLowerCase());
  const b = one(q, 'blur');
  let blur = 0;
  if (b !== undefined) {
    // Picsum: a bare `blur` means 5.
    if (b === '') blur = 5;
    else if (/^\d{1,2}$/.test(b) && Number(b) >= 1 && Number(b) <= 10) blur = Number(b);
    else throw new ParamError('blur must be a whole number from 1 to 10');
  }
  const f = one(q, 'format');
  let format: Format = 'webp';
  if (f !== undefined) {
    const k = f.toLowerCase();
    const ff = Object.hasOwn(FORMAT_ALIASES, k) ? FORMAT_ALIASES[k] : undefined;
    if (!ff) throw new ParamError(`format must be one of ${FORMATS.join(', ')}`);
    format = ff;
  }
  return { id: id ?? null, category: parseCategory(q), width, height, grayscale, blur, format };
}

/**
 * The output size for a source of srcW x srcH. One side given: the other follows the source's
 * proportions, clamped to the caps (the image is then cropped, never distorted).
 */
export function outputSize(o: ImageOptions, srcW: number, srcH: number, l: Limits): [number, number] {
  if (o.width !== null && o.height !== null) return [o.width, o.height];
  if (o.width === null && o.height === null) return [l.defaultWidth, l.defaultHeight];
  if (o.width !== null) {
    const cap = Math.min(l.maxHeight, Math.floor(l.maxPixels / o.width));
    return [o.width, clamp(Math.round((o.width * srcH) / srcW), cap)];
  }
  const h = o.height as number;
  const cap = Math.min(l.maxWidth, Math.floor(l.maxPixels / h));
  return [clamp(Math.round((h * srcW) / srcH), cap), h];
}

const clamp = (n: number, max: number) => Math.max(1, Math.min(max, n));

/** A stable string of everything that changes the output bytes (cache key part). */
export function optionsKey(o: ImageOptions): string {
  return `${o.width ?? ''}x${o.height ?? ''}.${o.grayscale ? 'g' : ''}${o.blur}.${o.format}`;
}

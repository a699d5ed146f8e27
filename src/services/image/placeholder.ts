// ?text= placeholders (what placeholder.com and via.placeholder.com served until they went away):
// a solid background, the text and a size label, drawn as SVG and rasterised by sharp (librsvg),
// so the text is escaped into XML, never markup, and its length is capped. And ?orientation=:
// landscape, portrait, or auto from Client Hints (Sec-CH-Viewport-*, Sec-CH-UA-Mobile) or the
// User-Agent, which picks which way round the default (or given) size is.
import { loadSharp } from '../../infra/media/sharp.ts';
import { type Format, type ImageOptions, type Limits, one, ParamError } from './params.ts';
import { encode } from './render.ts';

export const MAX_TEXT = 120;

export interface Placeholder {
  text: string;
  /** #rrggbb or #rrggbbaa. */
  bg: string;
  fg: string;
  /** Draw the "W × H" size label (alone when the text is empty). */
  label: boolean;
}

/** `abc`, `#aabbcc`, `aabbccdd`... -> `#aabbcc[dd]`. */
function colour(q: Record<string, unknown>, name: string): string | null {
  const v = one(q, name);
  if (v === undefined) return null;
  const m = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i.exec(v.trim());
  if (!m) throw new ParamError(`${name} must be a hex colour: rgb, rrggbb or rrggbbaa, with or without #`);
  const h = m[1]!.toLowerCase();
  return `#${h.length <= 4 ? [...h].map((c) => c + c).join('') : h}`;
}

/** Black or white, whichever reads better on `bg` (WCAG relative luminance). */
function contrasting(bg: string): string {
  const lin = (i: number) => {
    const c = Number.parseInt(bg.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return l > 0.179 ? '#333333' : '#ffffff';
}

/** The placeholder asked for, or null when the query has no `text` parameter. */
export function parsePlaceholder(q: Record<string, unknown>): Placeholder | null {
  const text = one(q, 'text');
  if (text === undefined) return null;
  // Code points, not UTF-16 units: an emoji is one character.
  if ([...text].length > MAX_TEXT) throw new ParamError(`text must be at most ${MAX_TEXT} characters`);
  if (/[\u0000-\u001f\u007f-\u009f\ufffe\uffff]/.test(text))
    throw new ParamError('text must not contain control characters');
  const bg = colour(q, 'bg') ?? '#cccccc';
  const fg = colour(q, 'fg') ?? contrasting(bg);
  const l = one(q, 'label');
  const label = l === undefined || !['0', 'false', 'no', 'off'].includes(l.toLowerCase());
  return { text: text.trim(), bg, fg, label };
}

const XML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
export const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => XML[c]!);

/** The SVG of a placeholder of w x h: the text fitted to the width, the label below it. */
export function placeholderSvg(p: Placeholder, w: number, h: number): string {
  const size = `${w} × ${h}`;
  const main = p.text || (p.label ? size : '');
  const sub = p.text && p.label ? size : '';
  // Average glyph width is about 0.6 em in a sans face: fit the line into 90% of the width.
  const chars = Math.max(1, [...main].length);
  const fs = Math.max(1, Math.min(h * (sub ? 0.25 : 0.3), (w * 0.9) / (chars * 0.6)));
  const subFs = Math.max(1, Math.min(fs * 0.5, h * 0.12, (w * 0.9) / (size.length * 0.6)));
  const cy = sub ? h / 2 - subFs * 0.6 : h / 2;
  const font = `font-family="DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"`;
  const t = (y: number, px: number, s: string, weight: string) =>
    `<text x="50%" y="${y.toFixed(1)}" ${font} font-size="${px.toFixed(1)}" font-weight="${weight}" fill="${p.fg}" text-anchor="middle" dominant-baseline="central">${escapeXml(s)}</text>`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
    `<rect width="100%" height="100%" fill="${p.bg}"/>`,
    main ? t(cy, fs, main, 'bold') : '',
    sub ? t(cy + fs * 0.6 + subFs * 0.9, subFs, sub, 'normal') : '',
    '</svg>',
  ].join('');
}

export async function renderPlaceholder(
  p: Placeholder,
  w: number,
  h: number,
  format: Format,
  quality: number,
): Promise<Buffer> {
  const sharp = await loadSharp();
  return encode(sharp(Buffer.from(placeholderSvg(p, w, h))), format, quality).toBuffer();
}

/** A stable string of everything that changes a placeholder's bytes (cache key part). */
export const placeholderKey = (p: Placeholder) => JSON.stringify([p.text, p.bg, p.fg, p.label]);

export type Orientation = 'landscape' | 'portrait';

/** The orientation= parameter: null when absent. */
export function parseOrientation(q: Record<string, unknown>): Orientation | 'auto' | null {
  const v = one(q, 'orientation');
  if (v === undefined) return null;
  const k = v.toLowerCase();
  if (k === 'auto' || k === 'landscape' || k === 'portrait') return k;
  throw new ParamError('orientation must be auto, landscape or portrait');
}

type Headers = Record<string, string | string[] | undefined>;
const header = (h: Headers, name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The Client Hints auto orientation reads (sent back in Accept-CH, and named in Vary). */
export const HINTS = ['Sec-CH-Viewport-Width', 'Sec-CH-Viewport-Height', 'Sec-CH-UA-Mobile'];

/**
 * Portrait for a viewport taller than wide (Sec-CH-Viewport-*), else for a mobile browser
 * (Sec-CH-UA-Mobile: ?1, or a phone's User-Agent; tablets count as landscape), else landscape.
 */
export function guessOrientation(h: Headers): Orientation {
  const vw = Number(header(h, 'sec-ch-viewport-width'));
  const vh = Number(header(h, 'sec-ch-viewport-height'));
  if (vw > 0 && vh > 0) return vh > vw ? 'portrait' : 'landscape';
  const mobile = header(h, 'sec-ch-ua-mobile')?.trim();
  if (mobile === '?1') return 'portrait';
  if (mobile === '?0') return 'landscape';
  const ua = header(h, 'user-agent') ?? '';
  if (/iPad|Tablet/i.test(ua)) return 'landscape';
  if (/iPhone|iPod|Android.+Mobile|Windows Phone|Mobile Safari|\bMobile\b/i.test(ua)) return 'portrait';
  return 'landscape';
}

/**
 * The size for orientation `to`: both sides given are swapped when they point the other way; one
 * side given gets the other from the default proportions turned to `to`; none, the default turned.
 */
export function orient(o: ImageOptions, to: Orientation, l: Limits): ImageOptions {
  const long = Math.max(l.defaultWidth, l.defaultHeight);
  const short = Math.min(l.defaultWidth, l.defaultHeight);
  const [dw, dh] = to === 'landscape' ? [long, short] : [short, long];
  let { width, height } = o;
  if (width !== null && height !== null) {
    if (to === 'landscape' ? height > width : width > height) [width, height] = [height, width];
  } else if (width !== null) height = Math.round((width * dh) / dw);
  else if (height !== null) width = Math.round((height * dw) / dh);
  else [width, height] = [dw, dh];
  width = Math.max(1, Math.min(width, l.maxWidth));
  height = Math.max(1, Math.min(height, l.maxHeight, Math.floor(l.maxPixels / width)));
  return { ...o, width, height };
}

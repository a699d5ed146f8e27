// What a generator returns and the small helpers they share: SVG documents rendered by sharp
// (librsvg) at the exact output size, or raw RGBA for pixel art that must stay nearest-neighbour.
import type { Seed } from '../seed.ts';

export type Art = { kind: 'svg'; svg: string } | { kind: 'raw'; rgba: Buffer };

export interface GenOptions {
  /** Letters for d=initials (already derived from initials/name); may be empty. */
  initials: string;
}

export type Generator = (seed: Seed, size: number, opts: GenOptions) => Art;

/** A number for SVG attributes: at most 2 decimals, no trailing zeros. */
export const n = (v: number): string => String(Math.round(v * 100) / 100);

/**
 * An SVG document drawn in `view` x `view` user units, rendered at `size` px. Below 48 px outlines
 * are thickened (up to 1.7x at 16 px) so they stay dark lines instead of fading to grey blur.
 */
export function svgDoc(size: number, view: number, body: string): Art {
  if (size < 48) {
    const k = Math.sqrt(48 / Math.max(size, 16));
    body = body.replace(/stroke-width="([\d.]+)"/g, (_m, w: string) => `stroke-width="${n(Number(w) * k)}"`);
  }
  return {
    kind: 'svg',
    svg: `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${view} ${view}">${body}</svg>`,
  };
}

/** Integer cell edges: `count` cells across `inner` px after `margin`; edges never land mid-pixel. */
export function edges(margin: number, inner: number, count: number): number[] {
  return Array.from({ length: count + 1 }, (_, i) => margin + Math.round((i * inner) / count));
}

/** Margin around grid art: ~8% of the size, at least 1 px from 16 px up, none below. */
export function gridMargin(size: number): number {
  return size < 16 ? 0 : Math.max(1, Math.round(size * 0.08));
}

/** A blank RGBA canvas filled with one colour (alpha 255 unless given). */
export function canvas(size: number, rgb: [number, number, number], alpha = 255): Buffer {
  const buf = Buffer.alloc(size * size * 4);
  for (let i = 0; i < buf.length; i += 4) {
    buf[i] = rgb[0];
    buf[i + 1] = rgb[1];
    buf[i + 2] = rgb[2];
    buf[i + 3] = alpha;
  }
  return buf;
}

export function fillRect(
  buf: Buffer,
  size: number,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  rgb: [number, number, number],
): void {
  for (let y = Math.max(0, y0); y < Math.min(size, y1); y++) {
    for (let x = Math.max(0, x0); x < Math.min(size, x1); x++) {
      const i = (y * size + x) * 4;
      buf[i] = rgb[0];
      buf[i + 1] = rgb[1];
      buf[i + 2] = rgb[2];
      buf[i + 3] = 255;
    }
  }
}

export type { Seed };

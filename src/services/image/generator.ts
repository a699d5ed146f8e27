// Built-in artwork: a seed string becomes an SVG scene (palette, layered gradients, shapes, grain)
// that librsvg renders through sharp. Pure and deterministic, so a fresh install works offline.
import { createHash } from 'node:crypto';
import { type Rng, rngFrom } from './rng.ts';

/** Bump when the artwork changes so cached renders of the old art are not reused. */
export const GENERATOR_VERSION = 1;

const ASPECTS: [number, number][] = [
  [3, 2],
  [16, 9],
  [4, 3],
  [3, 2],
  [16, 9],
  [1, 1],
  [2, 3],
  [21, 9],
];
const LONG_SIDE = 3600;

export interface Scene {
  /** Native size of the artwork: what "proportions of the source" means for generated images. */
  width: number;
  height: number;
  style: string;
}

function seedBytes(seed: string): Buffer {
  return createHash('sha256').update(`devutil-art:${seed}`).digest();
}

/** The native size and style of a seed's artwork, without rendering it. */
export function sceneOf(seed: string): Scene {
  const rng = rngFrom(seedBytes(seed));
  const [a, b] = rng.pick(ASPECTS);
  const width = a >= b ? LONG_SIDE : Math.round((LONG_SIDE * a) / b);
  const height = a >= b ? Math.round((LONG_SIDE * b) / a) : LONG_SIDE;
  return { width, height, style: rng.pick(STYLE_NAMES) };
}

const hsl = (h: number, s: number, l: number): string => {
  const hh = ((h % 360) + 360) % 360;
  const ss = Math.max(0, Math.min(100, s)) / 100;
  const ll = Math.max(0, Math.min(100, l)) / 100;
  const k = (n: number) => (n + hh / 30) % 12;
  const a = ss * Math.min(ll, 1 - ll);
  const f = (n: number) => ll - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  const hex = (x: number) =>
    Math.round(x * 255)
      .toString(16)
      .padStart(2, '0');
  return `#${hex(f(0))}${hex(f(8))}${hex(f(4))}`;
};

interface Palette {
  hues: number[];
  sat: number;
  /** Colour n of the palette at lightness l (n wraps). */
  c(n: number, l: number, ds?: number): string;
}

function palette(rng: Rng): Palette {
  const base = rng.float(0, 360);
  const schemes = [
    [0, 25, 50, -25],
    [0, 150, 210, 30],
    [0, 120, 240, 60],
    [0, 180, 20, 200],
    [0, 35, 180, 70],
  ];
  const offsets = rng.pick(schemes);
  const hues = offsets.map((o) => base + o + rng.float(-8, 8));
  const sat = rng.float(45, 80);
  return { hues, sat, c: (n, l, ds = 0) => hsl(hues[n % hues.length]!, sat + ds, l) };
}

type Ctx = { W: number; H: number; rng: Rng; p: Palette; defs: string[] };
type Style = (x: Ctx) => string;

const f1 = (n: number) => n.toFixed(1);

function skyGradient(x: Ctx, id: string, light: boolean): string {
  const { rng, p } = x;
  const angle = rng.float(60, 120);
  const l0 = light ? rng.float(70, 85) : rng.float(12, 25);
  const l1 = light ? rng.float(55, 70) : rng.float(30, 45);
  x.defs.push(
    `<linearGradient id="${id}" gradientTransform="rotate(${f1(angle)} .5 .5)">` +
      `<stop offset="0" stop-color="${p.c(0, l0)}"/><stop offset=".55" stop-color="${p.c(1, (l0 + l1) / 2)}"/>` +
      `<stop offset="1" stop-color="${p.c(2, l1)}"/></linearGradient>`,
  );
  return `<rect width="${x.W}" height="${x.H}" fill="url(#${id})"/>`;
}

function glow(x: Ctx, cx: number, cy: number, r: number, color: string, opacity: number, id: string): string {
  x.defs.push(
    `<radialGradient id="${id}"><stop offset="0" stop-color="${color}" stop-opacity="${opacity}"/>` +
      `<stop offset="1" stop-color="${color}" stop-opacity="0"/></radialGradient>`,
  );
  return `<circle cx="${f1(cx)}" cy="${f1(cy)}" r="${f1(r)}" fill="url(#${id})"/>`;
}

/** A smooth ridge line across the canvas through jittered points (Catmull-Rom to Bezier). */
function ridge(x: Ctx, base: number, amp: number, n: number, jag: boolean): string {
  const { W, H, rng } = x;
  const pts: [number, number][] = [];
  const phase = rng.float(0, Math.PI * 2);
  for (let i = 0; i <= n; i++) {
    const px = (W * i) / n;
    const py =
      base + amp * Math.sin(phase + i * rng.float(0.6, 1.2)) * rng.float(0.5, 1) + rng.float(-0.2, 0.2) * amp;
    pts.push([px, py]);
  }
  let d = `M0 ${H} L${f1(pts[0]![0])} ${f1(pts[0]![1])}`;
  for (let i = 0; i < pts.length - 1; i++) {
    const p0 = pts[Math.max(0, i - 1)]!;
    const p1 = pts[i]!;
    const p2 = pts[i + 1]!;
    const p3 = pts[Math.min(pts.length - 1, i + 2)]!;
    if (jag) {
      d += ` L${f1(p2[0])} ${f1(p2[1])}`;
      continue;
    }
    const c1 = [p1[0] + (p2[0] - p0[0]) / 6, p1[1] + (p2[1] - p0[1]) / 6];
    const c2 = [p2[0] - (p3[0] - p1[0]) / 6, p2[1] - (p3[1] - p1[1]) / 6];
    d += ` C${f1(c1[0]!)} ${f1(c1[1]!)} ${f1(c2[0]!)} ${f1(c2[1]!)} ${f1(p2[0])} ${f1(p2[1])}`;
  }
  return `${d} L${W} ${H} Z`;
}

const landscape =
  (jag: boolean): Style =>
  (x) => {
    const { W, H, rng, p } = x;
    const night = rng.next() < 0.3;
    let s = skyGradient(x, 'sky', !night);
    const sx = rng.float(0.15, 0.85) * W;
    // Square and portrait scenes are mostly seen centre-cropped to landscape: keep the sun and the
    // ridges inside the middle band so the crop is not all sky.
    const tall = H >= W * 0.9;
    const sy = rng.float(tall ? 0.3 : 0.15, 0.4) * H;
    const sr = rng.float(0.05, 0.09) * Math.min(W, H);
    s += glow(x, sx, sy, sr * 5, p.c(3, night ? 80 : 92), 0.55, 'halo');
    s += `<circle cx="${f1(sx)}" cy="${f1(sy)}" r="${f1(sr)}" fill="${p.c(3, night ? 90 : 96, -20)}"/>`;
    const layers = rng.int(4, 7);
    x.defs.push(
      `<linearGradient id="haze" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${p.c(0, night ? 30 : 88)}" stop-opacity="0"/>` +
        `<stop offset="1" stop-color="${p.c(0, night ? 30 : 88)}" stop-opacity=".22"/></linearGradient>`,
    );
    for (let i = 0; i < layers; i++) {
      const t = i / (layers - 1);
      const base = H * (tall ? 0.42 + 0.34 * t : 0.45 + 0.45 * t);
      const amp = H * (jag ? 0.12 : 0.07) * (1 - t * 0.5);
      const l = night ? 35 - t * 25 : 72 - t * 50;
      x.defs.push(
        `<linearGradient id="hill${i}" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${p.c(i + 1, l + 6)}"/>` +
          `<stop offset="1" stop-color="${p.c(i + 1, l - 8)}"/></linearGradient>`,
      );
      s += `<path d="${ridge(x, base, amp, rng.int(jag ? 9 : 4, jag ? 16 : 7), jag)}" fill="url(#hill${i})"/>`;
      // Aerial perspective: a haze that thickens toward each ridge's foot.
      if (i < layers - 1)
        s += `<rect y="${f1(base - amp * 2)}" width="${W}" height="${f1(H - base + amp * 2)}" fill="url(#haze)"/>`;
    }
    return s;
  };

const aurora: Style = (x) => {
  const { W, H, rng, p } = x;
  let s = skyGradient(x, 'bg', rng.next() < 0.4);
  const blobs = rng.int(4, 7);
  for (let i = 0; i < blobs; i++) {
    const r = rng.float(0.25, 0.5) * Math.max(W, H);
    s += glow(
      x,
      rng.float(0, W),
      rng.float(0, H),
      r,
      p.c(i, rng.float(50, 68), 20),
      rng.float(0.6, 0.95),
      `b${i}`,
    );
  }
  // A few crisp translucent rings give the soft field something to rest the eye on.
  const rings = rng.int(2, 5);
  for (let i = 0; i < rings; i++) {
    const r = rng.float(0.05, 0.3) * Math.min(W, H);
    s += `<circle cx="${f1(rng.float(0.1, 0.9) * W)}" cy="${f1(rng.float(0.1, 0.9) * H)}" r="${f1(r)}" fill="none" stroke="${p.c(3, 92, -30)}" stroke-opacity="${rng.float(0.25, 0.5).toFixed(2)}" stroke-width="${f1(Math.min(W, H) * rng.float(0.002, 0.01))}"/>`;
  }
  return s;
};

const waves: Style = (x) => {
  const { W, H, rng, p } = x;
  let s = skyGradient(x, 'bg', rng.next() < 0.6);
  const n = rng.int(6, 11);
  for (let i = 0; i < n; i++) {
    const y0 = H * (0.1 + (0.85 * i) / n);
    const amp = H * rng.float(0.04, 0.12);
    const k = rng.float(1, 2.5);
    const ph = rng.float(0, 6.28);
    let d = `M0 ${H}`;
    for (let j = 0; j <= 48; j++) {
      const px = (W * j) / 48;
      d += ` L${f1(px)} ${f1(y0 + amp * Math.sin(ph + (k * Math.PI * 2 * j) / 48))}`;
    }
    d += ` L${W} ${H} Z`;
    s += `<path d="${d}" fill="${p.c(i % 2, 28 + (50 * i) / n)}" opacity="${rng.float(0.65, 0.92).toFixed(2)}"/>`;
  }
  return s;
};

const geometric: Style = (x) => {
  const { W, H, rng, p } = x;
  const cols = rng.int(4, 8);
  const size = W / cols;
  const rows = Math.ceil(H / size);
  let s = `<rect width="${W}" height="${H}" fill="${p.c(0, rng.float(85, 93), -25)}"/>`;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const x0 = c * size;
      const y0 = r * size;
      const col = p.c(rng.int(0, 3), rng.float(35, 70));
      const bg = p.c(rng.int(0, 3), rng.float(55, 88), -10);
      s += `<rect x="${f1(x0)}" y="${f1(y0)}" width="${f1(size)}" height="${f1(size)}" fill="${bg}"/>`;
      const kind = rng.int(0, 4);
      const q = rng.int(0, 3);
      const cx = x0 + (q % 2) * size;
      const cy = y0 + Math.floor(q / 2) * size;
      if (kind === 0)
        s += `<circle cx="${f1(x0 + size / 2)}" cy="${f1(y0 + size / 2)}" r="${f1(size * 0.38)}" fill="${col}"/>`;
      else if (kind === 1) {
        // A quarter disc centred on one corner of the tile.
        const ox = cx === x0 ? x0 + size : x0;
        const oy = cy === y0 ? y0 + size : y0;
        const sweep = q === 0 || q === 3 ? 1 : 0;
        s += `<path d="M${f1(cx)} ${f1(cy)} L${f1(ox)} ${f1(cy)} A${f1(size)} ${f1(size)} 0 0 ${sweep} ${f1(cx)} ${f1(oy)} Z" fill="${col}"/>`;
      } else if (kind === 2)
        s += `<path d="M${f1(x0)} ${f1(y0 + size)} L${f1(x0 + size)} ${f1(y0)} L${f1(x0 + size)} ${f1(y0 + size)} Z" fill="${col}"/>`;
      else if (kind === 3)
        s += `<rect x="${f1(x0 + size * 0.2)}" y="${f1(y0 + size * 0.2)}" width="${f1(size * 0.6)}" height="${f1(size * 0.6)}" rx="${f1(size * 0.12)}" fill="${col}"/>`;
      else
        s += `<circle cx="${f1(x0 + size / 2)}" cy="${f1(y0 + size / 2)}" r="${f1(size * 0.18)}" fill="${col}"/>`;
    }
  }
  const clip = `<clipPath id="tiles"><rect width="${W}" height="${H}"/></clipPath>`;
  x.defs.push(clip);
  return `<g clip-path="url(#tiles)">${s}</g>`;
};

const bokeh: Style = (x) => {
  const { W, H, rng, p } = x;
  let s = skyGradient(x, 'bg', false);
  const n = rng.int(25, 45);
  for (let i = 0; i < 4; i++) {
    const col = p.c(i, rng.float(60, 80), 15);
    x.defs.push(
      `<radialGradient id="k${i}"><stop offset="0" stop-color="${col}" stop-opacity=".35"/>` +
        `<stop offset=".85" stop-color="${col}" stop-opacity=".6"/><stop offset="1" stop-color="${col}" stop-opacity="0"/></radialGradient>`,
    );
  }
  for (let i = 0; i < n; i++) {
    const r = Math.min(W, H) * rng.float(0.02, 0.12);
    s += `<circle cx="${f1(rng.float(0, W))}" cy="${f1(rng.float(0, H))}" r="${f1(r)}" fill="url(#k${rng.int(0, 3)})" opacity="${rng.float(0.4, 0.9).toFixed(2)}"/>`;
  }
  return s;
};

const STYLES: Record<string, Style> = {
  hills: landscape(false),
  mountains: landscape(true),
  aurora,
  waves,
  geometric,
  bokeh,
};
const STYLE_NAMES = Object.keys(STYLES);

/**
 * The scene as SVG, drawn in its native coordinates and sized to width x height with a centred
 * cover crop (vector art scales without loss, so rendering straight at the output size is cheapest).
 */
export function artSvg(seed: string, width: number, height: number): string {
  const bytes = seedBytes(seed);
  const scene = sceneOf(seed);
  const rng = rngFrom(bytes.subarray(16));
  const x: Ctx = { W: scene.width, H: scene.height, rng, p: palette(rng), defs: [] };
  const body = STYLES[scene.style]!(x);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${scene.width} ${scene.height}" preserveAspectRatio="xMidYMid slice">` +
    `<defs>${x.defs.join('')}</defs>${body}</svg>`
  );
}

// Excalidraw scenes to SVG without a browser. Excalidraw's own exporter (@excalidraw/utils) needs a
// DOM, so devutil draws the element types itself (rectangle, ellipse, diamond, line, arrow, text,
// freedraw) with roughjs's generator (MIT; Excalidraw's own sketch library, which computes paths
// in plain JavaScript), seeded by each element's seed as Excalidraw does: the same scene gives the
// same SVG. Images, frames and embeds are left out; fonts are named, not embedded.
import type { Element, Point, Scene } from './excalidraw-scene.ts';
import { parseScene } from './excalidraw-scene.ts';

type Rough = typeof import('roughjs').default;
type Generator = ReturnType<Rough['generator']>;
type Drawable = ReturnType<Generator['rectangle']>;
let rough: Promise<Rough> | undefined;

const PAD = 10;
const FONTS: Readonly<Record<number, string>> = {
  1: 'Virgil, Excalifont, "Comic Sans MS", cursive',
  2: 'Helvetica, Arial, sans-serif',
  3: 'Cascadia, "Cascadia Code", monospace',
  5: 'Excalifont, Virgil, cursive',
  6: 'Nunito, sans-serif',
  7: '"Lilita One", sans-serif',
  8: '"Comic Shanns", monospace',
};

export async function warm(): Promise<void> {
  rough ??= import('roughjs').then((m) => {
    // A CommonJS package: Node hands its exports object over as the default export.
    const r: unknown = m.default;
    return r as Rough;
  });
  await rough;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const r2 = (n: number) => Math.round(n * 100) / 100;

/** roughjs options as Excalidraw derives them from an element. */
function options(e: Element, fill: boolean) {
  const dash =
    e.strokeStyle === 'dashed'
      ? [8, 8 + e.strokeWidth]
      : e.strokeStyle === 'dotted'
        ? [1.5, 6 + e.strokeWidth]
        : undefined;
  return {
    seed: Math.abs(Math.trunc(e.seed)) % 2 ** 31 || 1,
    roughness: e.roughness,
    stroke: e.strokeColor,
    strokeWidth: e.strokeWidth,
    disableMultiStroke: e.strokeStyle !== 'solid',
    fillWeight: e.strokeWidth / 2,
    hachureGap: Math.max(e.strokeWidth, 1) * 4,
    preserveVertices: e.roughness < 2,
    fixedDecimalPlaceDigits: 2,
    ...(dash ? { strokeLineDash: dash } : {}),
    ...(fill && e.backgroundColor !== 'transparent'
      ? {
          fill: e.backgroundColor,
          fillStyle:
            e.fillStyle === 'solid'
              ? 'solid'
              : e.fillStyle === 'cross-hatch'
                ? 'cross-hatch'
                : e.fillStyle === 'zigzag'
                  ? 'zigzag'
                  : 'hachure',
        }
      : {}),
  };
}

function paths(g: Generator, d: Drawable): string {
  const dash = d.options.strokeLineDash ? ` stroke-dasharray="${d.options.strokeLineDash.join(' ')}"` : '';
  return g
    .toPaths(d)
    .map(
      (p) =>
        `<path d="${p.d}" stroke="${esc(p.stroke)}" stroke-width="${r2(p.strokeWidth)}" fill="${esc(p.fill ?? 'none')}"${p.fill && p.fill !== 'none' ? '' : dash} stroke-linecap="round" stroke-linejoin="round"/>`,
    )
    .join('');
}

/** An arrowhead at `tip`, pointing away from `from`. */
function arrowhead(g: Generator, kind: string, tip: Point, from: Point, e: Element): Drawable[] {
  const [x, y] = tip;
  const a = Math.atan2(y - from[1], x - from[0]);
  const len = Math.min(30, Math.hypot(x - from[0], y - from[1]) / 2 || 10);
  const o = { ...options(e, false), strokeLineDash: undefined };
  const wing = (s: number): Point => [x - len * Math.cos(a + s), y - len * Math.sin(a + s)];
  if (kind === 'dot' || kind === 'circle')
    return [
      g.circle(x, y, Math.max(6, e.strokeWidth * 4), { ...o, fill: e.strokeColor, fillStyle: 'solid' }),
    ];
  if (kind === 'bar') {
    const [p, q] = [Math.PI / 2, -Math.PI / 2].map(
      (s) => [x + 10 * Math.cos(a + s), y + 10 * Math.sin(a + s)] as Point,
    );
    return [g.line(p![0], p![1], q![0], q![1], o)];
  }
  const [w1, w2] = [wing(0.45), wing(-0.45)];
  if (kind === 'triangle')
    return [g.polygon([tip, w1, w2], { ...o, fill: e.strokeColor, fillStyle: 'solid' })];
  return [g.line(x, y, w1[0], w1[1], o), g.line(x, y, w2[0], w2[1], o)];
}

function shape(g: Generator, e: Element): string {
  const { x, y, width: w, height: h } = e;
  if (e.type === 'rectangle') {
    if (!e.rounded) return paths(g, g.rectangle(x, y, w, h, options(e, true)));
    const r = Math.min(w, h) * 0.25;
    const d = `M ${x + r} ${y} L ${x + w - r} ${y} Q ${x + w} ${y}, ${x + w} ${y + r} L ${x + w} ${y + h - r} Q ${x + w} ${y + h}, ${x + w - r} ${y + h} L ${x + r} ${y + h} Q ${x} ${y + h}, ${x} ${y + h - r} L ${x} ${y + r} Q ${x} ${y}, ${x + r} ${y}`;
    return paths(g, g.path(d, options(e, true)));
  }
  if (e.type === 'ellipse') return paths(g, g.ellipse(x + w / 2, y + h / 2, w, h, options(e, true)));
  if (e.type === 'diamond')
    return paths(
      g,
      g.polygon(
        [
          [x + w / 2, y],
          [x + w, y + h / 2],
          [x + w / 2, y + h],
          [x, y + h / 2],
        ],
        options(e, true),
      ),
    );
  const pts = e.points.map(([px, py]): Point => [x + px, y + py]);
  if (e.type === 'freedraw') {
    const d = pts.map(([px, py], i) => `${i ? 'L' : 'M'}${r2(px)} ${r2(py)}`).join(' ');
    return `<path d="${d}" stroke="${esc(e.strokeColor)}" stroke-width="${r2(e.strokeWidth * 1.5)}" fill="none" stroke-linecap="round" stroke-linejoin="round"/>`;
  }
  // line, arrow
  const closed = e.type === 'line' && e.polygon && pts.length > 2;
  let out =
    pts.length < 2
      ? ''
      : closed
        ? paths(g, g.polygon(pts, options(e, true)))
        : paths(
            g,
            e.rounded && pts.length > 2
              ? g.curve(pts, options(e, false))
              : g.linearPath(pts, options(e, false)),
          );
  if (e.type === 'arrow' && pts.length >= 2) {
    if (e.endArrowhead)
      for (const d of arrowhead(g, e.endArrowhead, pts.at(-1)!, pts.at(-2)!, e)) out += paths(g, d);
    if (e.startArrowhead)
      for (const d of arrowhead(g, e.startArrowhead, pts[0]!, pts[1]!, e)) out += paths(g, d);
  }
  return out;
}

function text(e: Element): string {
  const lines = e.text.split(/\r?\n/);
  const anchor = e.textAlign === 'center' ? 'middle' : e.textAlign === 'right' ? 'end' : 'start';
  const tx = e.textAlign === 'center' ? e.x + e.width / 2 : e.textAlign === 'right' ? e.x + e.width : e.x;
  const step = e.fontSize * e.lineHeight;
  // Each line's baseline sits where Excalidraw puts it: its line box's top plus the font's ascent.
  const spans = lines
    .map(
      (l, i) =>
        `<text x="${r2(tx)}" y="${r2(e.y + i * step + step / 2 + e.fontSize * 0.35)}">${esc(l)}</text>`,
    )
    .join('');
  const family = FONTS[e.fontFamily] ?? FONTS[1]!;
  return `<g font-family="${esc(family)}" font-size="${e.fontSize}" fill="${esc(e.strokeColor)}" text-anchor="${anchor}" style="white-space: pre">${spans}</g>`;
}

/** The extent of an element (before rotation; a rotated one gets its diagonal as margin). */
function extent(e: Element): [number, number, number, number] {
  let [x0, y0, x1, y1] = [e.x, e.y, e.x + e.width, e.y + e.height];
  for (const [px, py] of e.points) {
    x0 = Math.min(x0, e.x + px);
    y0 = Math.min(y0, e.y + py);
    x1 = Math.max(x1, e.x + px);
    y1 = Math.max(y1, e.y + py);
  }
  if (e.angle) {
    const [cx, cy, r] = [(x0 + x1) / 2, (y0 + y1) / 2, Math.hypot(x1 - x0, y1 - y0) / 2];
    return [cx - r, cy - r, cx + r, cy + r];
  }
  return [x0, y0, x1, y1];
}

export function drawScene(s: Scene, g: Generator): string {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const e of s.elements) {
    const [a, b, c, d] = extent(e);
    [x0, y0, x1, y1] = [Math.min(x0, a), Math.min(y0, b), Math.max(x1, c), Math.max(y1, d)];
  }
  if (!Number.isFinite(x0)) [x0, y0, x1, y1] = [0, 0, 0, 0];
  const [w, h] = [r2(x1 - x0 + 2 * PAD), r2(y1 - y0 + 2 * PAD)];
  const body = s.elements.map((e) => {
    const inner = e.type === 'text' ? text(e) : shape(g, e);
    const [cx, cy] = [e.x + e.width / 2, e.y + e.height / 2];
    const rotate = e.angle ? ` transform="rotate(${r2((e.angle * 180) / Math.PI)} ${r2(cx)} ${r2(cy)})"` : '';
    const opacity = e.opacity < 100 ? ` opacity="${e.opacity / 100}"` : '';
    return rotate || opacity ? `<g${rotate}${opacity}>${inner}</g>` : inner;
  });
  const bg =
    s.background !== 'transparent'
      ? `<rect x="${r2(x0 - PAD)}" y="${r2(y0 - PAD)}" width="${w}" height="${h}" fill="${esc(s.background)}"/>`
      : '';
  return `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" viewBox="${r2(x0 - PAD)} ${r2(y0 - PAD)} ${w} ${h}" width="${w}" height="${h}">${bg}${body.join('')}</svg>`;
}

export async function render(source: string): Promise<string> {
  const scene = parseScene(source);
  await warm();
  return drawScene(scene, (await rough!).generator());
}

// Small SVG charts the page draws itself (no library, no CDN, no inline style: the CSP allows none):
// stacked columns over time and the bars inside table cells. Colours come from CSS classes, so the
// light and dark themes follow the stylesheet; every chart has a text equivalent beside it.
const NS = 'http://www.w3.org/2000/svg';
const W = 640;
const H = 200;
const PAD = { left: 64, right: 8, top: 10, bottom: 26 };

type Attrs = Record<string, string | number>;

function svg<K extends keyof SVGElementTagNameMap>(
  name: K,
  attrs: Attrs,
  parent?: Element,
  text?: string,
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  parent?.append(e);
  return e;
}

/** 1, 2 or 5 times a power of ten at or above n: axis maxima people can read. */
export function niceMax(n: number): number {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

export interface Stack {
  name: string;
  /** CSS class of the series' shapes (s0 accent, s1 error...). */
  cls: string;
  values: number[];
}

let ids = 0;

/** Stacked columns, one per step; `title` is the accessible name, `desc` its one-line summary. */
export function columns(o: {
  title: string;
  desc: string;
  labels: string[];
  stacks: Stack[];
  format: (n: number) => string;
}): SVGSVGElement {
  const id = `chart-${++ids}`;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    class: 'chart',
    role: 'img',
    'aria-labelledby': `${id}-t ${id}-d`,
  });
  svg('title', { id: `${id}-t` }, root, o.title);
  svg('desc', { id: `${id}-d` }, root, o.desc);
  const n = o.labels.length;
  const totals = o.labels.map((_, i) => o.stacks.reduce((s, st) => s + (st.values[i] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  for (const v of [0, max / 2, max]) {
    svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: 'grid' }, root);
    svg('text', { x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, root, o.format(v));
  }
  const step = plotW / Math.max(1, n);
  const gap = step > 4 ? 1 : 0;
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const st of o.stacks) {
      const v = st.values[i] ?? 0;
      if (v <= 0) continue;
      const r = svg(
        'rect',
        {
          x: PAD.left + i * step + gap / 2,
          y: y(base + v),
          width: Math.max(0.5, step - gap),
          height: Math.max(0.5, y(base) - y(base + v)),
          class: st.cls,
        },
        root,
      );
      svg('title', {}, r, `${o.labels[i]}: ${o.format(v)} ${st.name}`);
      base += v;
    }
  }
  for (const i of [0, Math.floor(n / 2), n - 1]) {
    if (i < 0 || !o.labels[i]) continue;
    const x = PAD.left + i * step + step / 2;
    const anchor = i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle';
    svg('text', { x, y: H - 8, 'text-anchor': anchor, class: 'tick' }, root, o.labels[i]);
  }
  return root;
}

/** A bar for a table cell, proportional to value/max; decorative (the cell's number says it). */
export function bar(value: number, max: number, cls = 's0'): SVGSVGElement {
  const root = svg('svg', {
    viewBox: '0 0 100 8',
    preserveAspectRatio: 'none',
    class: 'bar',
    'aria-hidden': 'true',
    focusable: 'false',
  });
  svg('rect', { x: 0, y: 0, width: 100, height: 8, class: 'track' }, root);
  const w = max > 0 ? Math.max(value > 0 ? 1 : 0, (100 * value) / max) : 0;
  svg('rect', { x: 0, y: 0, width: Math.min(100, w), height: 8, class: cls }, root);
  return root;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 || v >= 10 ? Math.round(v) : v.toFixed(1)} ${UNITS[u]}`;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

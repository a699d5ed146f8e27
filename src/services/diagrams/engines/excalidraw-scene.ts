// An Excalidraw scene (the JSON of a .excalidraw file) read and checked: every element the SVG
// renderer (excalidraw.ts) uses gets a value of the right type within bounds, or the scene is
// refused with a message naming the element and field (400). Values that reach SVG attributes
// (colours, fonts) must have a shape that cannot leave the attribute. Pure: no DOM, no I/O.
import { DiagramError, lineOf } from './diagram-error.ts';

export type Point = [number, number];

export interface Element {
  type: string;
  x: number;
  y: number;
  width: number;
  height: number;
  /** Radians, clockwise about the centre. */
  angle: number;
  strokeColor: string;
  backgroundColor: string;
  fillStyle: string;
  strokeWidth: number;
  strokeStyle: string;
  roughness: number;
  /** 0..100. */
  opacity: number;
  seed: number;
  rounded: boolean;
  /** line, arrow, freedraw: relative to x, y. */
  points: Point[];
  startArrowhead: string | null;
  endArrowhead: string | null;
  /** line: a closed shape. */
  polygon: boolean;
  text: string;
  fontSize: number;
  fontFamily: number;
  textAlign: string;
  lineHeight: number;
}

export interface Scene {
  elements: Element[];
  background: string;
}

/** The element types drawn; others (image, frame, embeddable, a newer version's) are left out. */
export const DRAWN = new Set(['rectangle', 'ellipse', 'diamond', 'line', 'arrow', 'text', 'freedraw']);
/** Bounds: a coordinate or size past these is no drawing but a way to make the renderer work. */
const MAX_COORD = 100_000;
const MAX_ELEMENTS = 10_000;
const MAX_POINTS = 200_000;
const COLOR = /^(?:#[0-9a-f]{3,8}|[a-z]{1,30}|rgba?\(\s*[\d.]+%?(?:\s*,\s*[\d.]+%?){2,3}\s*\))$/i;
const ARROWHEADS = new Set(['arrow', 'triangle', 'bar', 'dot', 'circle']);

function bad(where: string, what: string): never {
  throw new DiagramError(`excalidraw: ${where} ${what}`);
}

function num(o: Record<string, unknown>, k: string, where: string, dflt: number, min: number, max: number) {
  const v = o[k];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v))
    bad(`${where}.${k}`, `must be a number, not ${JSON.stringify(v)?.slice(0, 30)}`);
  if (v < min || v > max) bad(`${where}.${k}`, `must be between ${min} and ${max}`);
  return v;
}

function str(o: Record<string, unknown>, k: string, where: string, dflt: string, max = 100): string {
  const v = o[k];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'string') bad(`${where}.${k}`, 'must be a string');
  if (v.length > max) bad(`${where}.${k}`, `is longer than ${max} characters`);
  return v;
}

function color(o: Record<string, unknown>, k: string, where: string, dflt: string): string {
  const v = str(o, k, where, dflt);
  if (!COLOR.test(v.trim())) bad(`${where}.${k}`, `is not a colour: ${JSON.stringify(v.slice(0, 30))}`);
  return v.trim();
}

function arrowhead(o: Record<string, unknown>, k: string): string | null {
  const v = o[k];
  if (v === undefined || v === null) return null;
  return typeof v === 'string' && ARROWHEADS.has(v) ? v : 'arrow';
}

/** The line of a JSON.parse error: Node 20 names a position, later versions a line. */
function jsonLine(source: string, message: string): number | undefined {
  const line = lineOf(message);
  if (line !== undefined) return line;
  const pos = /position (\d+)/.exec(message);
  return pos ? source.slice(0, Number(pos[1])).split('\n').length : undefined;
}

/** Parses and checks `source`; DiagramError (400) names what is wrong. */
export function parseScene(source: string): Scene {
  let doc: unknown;
  try {
    doc = JSON.parse(source);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(`excalidraw: the scene is not JSON: ${msg}`, jsonLine(source, msg));
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    bad('the scene', 'must be a JSON object with an "elements" array (an .excalidraw file)');
  const d = doc as Record<string, unknown>;
  if (d['type'] !== undefined && d['type'] !== 'excalidraw')
    bad('the scene', `has type ${JSON.stringify(d['type'])?.slice(0, 30)}, not "excalidraw"`);
  const list = d['elements'];
  if (!Array.isArray(list)) bad('the scene', 'has no "elements" array');
  if (list.length > MAX_ELEMENTS) bad('the scene', `has more than ${MAX_ELEMENTS} elements`);
  const app = d['appState'];
  const background =
    app && typeof app === 'object' && !Array.isArray(app)
      ? color(app as Record<string, unknown>, 'viewBackgroundColor', 'appState', '#ffffff')
      : '#ffffff';
  let points = 0;
  const elements: Element[] = [];
  list.forEach((raw: unknown, i) => {
    const where = `elements[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) bad(where, 'must be an object');
    const o = raw as Record<string, unknown>;
    if (typeof o['type'] !== 'string') bad(`${where}.type`, 'must be a string');
    if (o['isDeleted'] === true || !DRAWN.has(o['type'])) return;
    const pts: Point[] = [];
    const rawPoints = o['points'];
    if (rawPoints !== undefined) {
      if (!Array.isArray(rawPoints)) bad(`${where}.points`, 'must be an array of [x, y]');
      points += rawPoints.length;
      if (points > MAX_POINTS) bad('the scene', `has more than ${MAX_POINTS} points`);
      for (const p of rawPoints) {
        if (!Array.isArray(p) || !p.every((c) => typeof c === 'number' && Math.abs(c) <= MAX_COORD))
          bad(`${where}.points`, `must be [x, y] numbers within ±${MAX_COORD}`);
        pts.push([p[0] as number, p[1] as number]);
      }
    }
    if ((o['type'] === 'line' || o['type'] === 'arrow' || o['type'] === 'freedraw') && pts.length === 0)
      bad(`${where}.points`, 'must have at least one point');
    const text = str(o, 'text', where, '', 100_000);
    elements.push({
      type: o['type'],
      x: num(o, 'x', where, Number.NaN, -MAX_COORD, MAX_COORD),
      y: num(o, 'y', where, Number.NaN, -MAX_COORD, MAX_COORD),
      width: num(o, 'width', where, 0, 0, MAX_COORD),
      height: num(o, 'height', where, 0, 0, MAX_COORD),
      angle: num(o, 'angle', where, 0, -1000, 1000),
      strokeColor: color(o, 'strokeColor', where, '#1e1e1e'),
      backgroundColor: color(o, 'backgroundColor', where, 'transparent'),
      fillStyle: str(o, 'fillStyle', where, 'solid'),
      strokeWidth: num(o, 'strokeWidth', where, 2, 0, 100),
      strokeStyle: str(o, 'strokeStyle', where, 'solid'),
      roughness: num(o, 'roughness', where, 1, 0, 10),
      opacity: num(o, 'opacity', where, 100, 0, 100),
      seed: num(o, 'seed', where, i + 1, -(2 ** 53), 2 ** 53),
      rounded: o['roundness'] !== undefined && o['roundness'] !== null,
      points: pts,
      startArrowhead: arrowhead(o, 'startArrowhead'),
      endArrowhead: o['type'] === 'arrow' && !('endArrowhead' in o) ? 'arrow' : arrowhead(o, 'endArrowhead'),
      polygon: o['polygon'] === true,
      text,
      fontSize: num(o, 'fontSize', where, 20, 1, 1000),
      fontFamily: num(o, 'fontFamily', where, 1, 0, 100),
      textAlign: str(o, 'textAlign', where, 'left'),
      lineHeight: num(o, 'lineHeight', where, 1.25, 0.1, 10),
    });
    const e = elements.at(-1)!;
    if (Number.isNaN(e.x) || Number.isNaN(e.y)) bad(where, 'needs x and y');
  });
  return { elements, background };
}

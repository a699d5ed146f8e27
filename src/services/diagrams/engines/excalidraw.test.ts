// The Excalidraw renderer without a browser: every element type it draws shows up in the SVG, the
// same scene gives the same SVG (elements are seeded), and what is not a scene is refused with a
// message naming the element and field; text and colours cannot leave their SVG attribute.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiagramError } from './diagram-error.ts';
import { render } from './excalidraw.ts';

const scene = (elements: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'excalidraw', version: 2, elements, ...extra });

async function refusal(source: string): Promise<DiagramError> {
  try {
    await render(source);
  } catch (err) {
    assert.ok(err instanceof DiagramError, String(err));
    return err;
  }
  assert.fail('expected a DiagramError');
}

const ALL = [
  { type: 'rectangle', x: 0, y: 0, width: 100, height: 50, backgroundColor: '#ffc9c9', fillStyle: 'solid' },
  { type: 'ellipse', x: 150, y: 0, width: 80, height: 50, strokeStyle: 'dashed' },
  { type: 'diamond', x: 300, y: 0, width: 60, height: 60, backgroundColor: 'red', fillStyle: 'cross-hatch' },
  {
    type: 'line',
    x: 0,
    y: 100,
    points: [
      [0, 0],
      [50, 20],
      [100, 0],
    ],
    roundness: { type: 2 },
  },
  {
    type: 'arrow',
    x: 150,
    y: 100,
    points: [
      [0, 0],
      [100, 0],
    ],
    startArrowhead: 'dot',
    endArrowhead: 'triangle',
  },
  {
    type: 'freedraw',
    x: 300,
    y: 100,
    points: [
      [0, 0],
      [5, 5],
      [10, 3],
    ],
  },
  {
    type: 'text',
    x: 0,
    y: 200,
    width: 100,
    height: 50,
    text: 'first line\nsecond & <last>',
    fontFamily: 2,
    angle: 0.5,
  },
  { type: 'image', x: 0, y: 0, width: 10, height: 10, fileId: 'x' },
  { type: 'rectangle', x: 9000, y: 9000, width: 10, height: 10, isDeleted: true },
];

describe('excalidraw renderer', { timeout: 60_000 }, () => {
  it('draws every element type, escapes text and leaves out deleted and unsupported elements', async () => {
    const svg = await render(scene(ALL, { appState: { viewBackgroundColor: '#f8f9fa' } }));
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok(svg.includes('>first line</text>'));
    assert.ok(svg.includes('>second &amp; &lt;last&gt;</text>'));
    assert.match(svg, /fill="#ffc9c9"/, 'a solid fill');
    assert.match(svg, /stroke-dasharray=/, 'a dashed stroke');
    assert.match(svg, /rotate\(28\.65 /, 'the rotated text');
    assert.match(svg, /fill="#f8f9fa"/, 'the background');
    assert.match(svg, /font-family="Helvetica/);
    // The deleted rectangle at 9000 does not widen the drawing.
    const width = Number(/width="([\d.]+)"/.exec(svg)?.[1]);
    assert.ok(width < 1000, String(width));
    assert.ok((svg.match(/<path /g) ?? []).length > 10);
  });

  it('gives the same SVG for the same scene (seeded), another for another seed', async () => {
    const a = scene([{ type: 'rectangle', x: 0, y: 0, width: 100, height: 50, seed: 7 }]);
    assert.equal(await render(a), await render(a));
    assert.notEqual(await render(a), await render(a.replace('"seed":7', '"seed":8')));
  });

  it('refuses what is not JSON with the line of the mistake', async () => {
    const e = await refusal('{\n  "elements": [\n    {"type": "rectangle",, }\n  ]\n}');
    assert.match(e.message, /not JSON/);
    assert.equal(e.line, 3);
  });

  it('refuses a wrong schema naming the element and field', async () => {
    assert.match((await refusal('[1, 2]')).message, /must be a JSON object/);
    assert.match((await refusal('{"type": "vega"}')).message, /not "excalidraw"/);
    assert.match((await refusal('{"elements": 3}')).message, /no "elements" array/);
    assert.match((await refusal(scene([42]))).message, /elements\[0\] must be an object/);
    assert.match(
      (await refusal(scene([{ type: 'rectangle', x: 'a', y: 0 }]))).message,
      /elements\[0\]\.x must be a number/,
    );
    assert.match((await refusal(scene([{ type: 'ellipse', y: 0 }]))).message, /elements\[0\] needs x and y/);
    assert.match(
      (await refusal(scene([{ type: 'arrow', x: 0, y: 0 }]))).message,
      /points must have at least one/,
    );
    assert.match((await refusal(scene([{ type: 'rectangle', x: 1e9, y: 0 }]))).message, /between/);
  });

  it('refuses colours and fonts that would leave their attribute, and oversized scenes', async () => {
    const inject = '#fff" onload="alert(1)';
    assert.match(
      (await refusal(scene([{ type: 'rectangle', x: 0, y: 0, strokeColor: inject }]))).message,
      /not a colour/,
    );
    assert.match(
      (await refusal(scene([], { appState: { viewBackgroundColor: 'url(#x)' } }))).message,
      /not a colour/,
    );
    const many = Array.from({ length: 10_001 }, () => ({ type: 'text', x: 0, y: 0, text: 'x' }));
    assert.match((await refusal(scene(many))).message, /more than 10000 elements/);
    const points = Array.from({ length: 200_001 }, (_, i) => [i % 100, 0]);
    assert.match(
      (await refusal(scene([{ type: 'freedraw', x: 0, y: 0, points }]))).message,
      /more than 200000 points/,
    );
  });

  it('draws an empty scene as an empty picture', async () => {
    assert.match(await render(scene([])), /^<svg [^>]*viewBox="-10 -10 20 20"/);
  });
});

// ?text= placeholders and ?orientation= through the real composition (sharp renders the SVG), with
// hostile-input tables for the new parameters.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { missing } from '../../../test/helpers/tools.ts';
import type { ImageOptions } from './params.ts';
import { guessOrientation, orient, parsePlaceholder, placeholderSvg } from './placeholder.ts';

const LIMITS = {
  defaultWidth: 1920,
  defaultHeight: 1080,
  maxWidth: 5000,
  maxHeight: 5000,
  maxPixels: 25_000_000,
};
const noFonts = existsSync('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf')
  ? false
  : missing('fonts-dejavu-core is not installed (placeholder text)');

/** Pixels of `img` within 40 of `rgb` on every channel. */
async function count(img: Buffer, rgb: [number, number, number]): Promise<number> {
  const { data, info } = await sharp(img).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let n = 0;
  for (let i = 0; i < data.length; i += info.channels)
    if (rgb.every((c, k) => Math.abs(data[i + k]! - c) <= 40)) n++;
  return n;
}

describe('image placeholders (?text=) and orientation', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { image: { rateLimit: 'off' } } });
  });
  after(async () => app?.close());

  it('draws the text in fg on bg at the asked size, with the size label', { skip: noFonts }, async () => {
    const r = await app.inject({
      url: '/rest/api/v1/image?text=Hello&width=300&height=120&bg=c00&fg=ffffff&format=png',
    });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.headers['content-type'], 'image/png');
    assert.equal(r.headers['image-source'], 'placeholder');
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.width, m.height], [300, 120]);
    const red = await count(r.rawPayload, [204, 0, 0]);
    const white = await count(r.rawPayload, [255, 255, 255]);
    assert.ok(red > 300 * 120 * 0.6, 'mostly background');
    assert.ok(white > 200, `the text is drawn (${white} text pixels)`);
    // Without text and label the picture is background only: the text pixels above came from text.
    const bare = await app.inject({
      url: '/rest/api/v1/image?text=&label=0&width=300&height=120&bg=c00&format=png',
    });
    assert.equal(await count(bare.rawPayload, [255, 255, 255]), 0);
    assert.equal(await count(bare.rawPayload, [204, 0, 0]), 300 * 120);
  });

  it('is cacheable: the same query gives the same ETag and a 304', async () => {
    const url = '/rest/api/v1/image?text=cache&width=120&height=60';
    const a = await app.inject({ url });
    const b = await app.inject({ url, headers: { 'if-none-match': String(a.headers.etag) } });
    assert.ok(a.headers.etag);
    assert.match(String(a.headers['cache-control']), /^public, max-age=\d+/);
    assert.equal(b.statusCode, 304);
  });

  const ok: { name: string; query: string; size: [number, number]; format?: string }[] = [
    { name: 'empty text: the size label alone', query: 'text=&width=200&height=100', size: [200, 100] },
    { name: 'one side: the other from the default proportions', query: 'text=x&width=320', size: [320, 180] },
    {
      name: 'markup in the text is drawn as text',
      query: `text=${encodeURIComponent('</text><script>alert(1)</script>&amp;"\'')}&width=200&height=80`,
      size: [200, 80],
    },
    {
      name: 'emoji and right-to-left text',
      query: `text=${encodeURIComponent('😀 שלום')}&width=200&height=80`,
      size: [200, 80],
    },
    { name: 'jpeg', query: 'text=j&width=64&height=64&format=jpg', size: [64, 64], format: 'jpeg' },
    {
      name: 'rrggbbaa colours',
      query: 'text=a&bg=%2300000080&fg=abc&width=50&height=50&format=png',
      size: [50, 50],
      format: 'png',
    },
  ];
  for (const row of ok)
    it(`${row.name} -> 200`, async () => {
      const r = await app.inject({ url: `/rest/api/v1/image?${row.query}` });
      assert.equal(r.statusCode, 200, r.body);
      const m = await sharp(r.rawPayload).metadata();
      assert.deepEqual([m.width, m.height], row.size);
      assert.equal(m.format, row.format ?? 'webp');
    });

  const bad: { query: string; message: RegExp }[] = [
    { query: `text=${'x'.repeat(121)}`, message: /at most 120 characters/ },
    { query: 'text=a%00b', message: /control characters/ },
    { query: 'text=a%0d%0ab', message: /control characters/ },
    { query: 'text=a&text=b', message: /text/ },
    { query: 'text=a&bg=red', message: /hex colour/ },
    { query: 'text=a&fg=%23ggg', message: /hex colour/ },
    { query: 'text=a&width=0', message: /width/ },
    { query: 'text=a&width=99999', message: /width/ },
    { query: 'orientation=sideways', message: /orientation must be/ },
  ];
  for (const row of bad)
    it(`refuses ${row.query.slice(0, 40)} with 400 in the v1 envelope`, async () => {
      const r = await app.inject({ url: `/rest/api/v1/image?${row.query}` });
      assert.equal(r.statusCode, 400);
      const body = r.json();
      assert.equal(body.status, 0);
      assert.equal(body.data, null);
      assert.match(body.message, row.message);
    });

  it('counts code points for the cap: 120 emoji are accepted', () => {
    assert.ok(parsePlaceholder({ text: '😀'.repeat(120) }));
    assert.throws(() => parsePlaceholder({ text: '😀'.repeat(121) }), /at most 120/);
  });

  it('escapes the text into the SVG', () => {
    const p = parsePlaceholder({ text: '<b>&"\'' })!;
    const svg = placeholderSvg(p, 100, 50);
    assert.ok(svg.includes('&lt;b&gt;&amp;&quot;&apos;'));
    assert.ok(!svg.includes('<b>'));
  });

  const hints: { name: string; headers: Record<string, string>; want: 'landscape' | 'portrait' }[] = [
    {
      name: 'tall viewport',
      headers: { 'sec-ch-viewport-width': '390', 'sec-ch-viewport-height': '844' },
      want: 'portrait',
    },
    {
      name: 'wide viewport beats a mobile hint',
      headers: { 'sec-ch-viewport-width': '1200', 'sec-ch-viewport-height': '800', 'sec-ch-ua-mobile': '?1' },
      want: 'landscape',
    },
    { name: 'Sec-CH-UA-Mobile ?1', headers: { 'sec-ch-ua-mobile': '?1' }, want: 'portrait' },
    {
      name: 'Sec-CH-UA-Mobile ?0 beats a phone UA',
      headers: { 'sec-ch-ua-mobile': '?0', 'user-agent': 'Mozilla/5.0 (iPhone)' },
      want: 'landscape',
    },
    {
      name: 'iPhone UA',
      headers: { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148' },
      want: 'portrait',
    },
    {
      name: 'Android phone UA',
      headers: { 'user-agent': 'Mozilla/5.0 (Linux; Android 14; Pixel 8) Chrome/126 Mobile Safari/537.36' },
      want: 'portrait',
    },
    {
      name: 'Android tablet UA',
      headers: { 'user-agent': 'Mozilla/5.0 (Linux; Android 14; SM-X710) Chrome/126 Safari/537.36' },
      want: 'landscape',
    },
    {
      name: 'iPad UA',
      headers: { 'user-agent': 'Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) Mobile/15E148' },
      want: 'landscape',
    },
    {
      name: 'desktop UA',
      headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0' },
      want: 'landscape',
    },
    {
      name: 'junk viewport hints are ignored',
      headers: { 'sec-ch-viewport-width': 'abc', 'sec-ch-viewport-height': '-5', 'sec-ch-ua-mobile': '?1' },
      want: 'portrait',
    },
    { name: 'nothing at all', headers: {}, want: 'landscape' },
  ];
  for (const row of hints)
    it(`orientation=auto: ${row.name} -> ${row.want}`, () =>
      assert.equal(guessOrientation(row.headers), row.want));

  it('turns the size to the orientation', () => {
    const o = (width: number | null, height: number | null): ImageOptions => ({
      id: null,
      category: null,
      width,
      height,
      grayscale: false,
      blur: 0,
      format: 'webp',
    });
    const size = (x: ImageOptions) => [x.width, x.height];
    assert.deepEqual(size(orient(o(null, null), 'portrait', LIMITS)), [1080, 1920]);
    assert.deepEqual(size(orient(o(null, null), 'landscape', LIMITS)), [1920, 1080]);
    assert.deepEqual(size(orient(o(800, 600), 'portrait', LIMITS)), [600, 800]);
    assert.deepEqual(size(orient(o(600, 800), 'portrait', LIMITS)), [600, 800]);
    assert.deepEqual(size(orient(o(540, null), 'portrait', LIMITS)), [540, 960]);
    assert.deepEqual(
      size(orient(o(null, 4000), 'landscape', LIMITS)),
      [5000, 4000],
      'clamped: 4000 high in landscape wants 7111 wide, the cap is 5000',
    );
  });

  it('answers orientation=auto with a portrait image for a phone, and asks for the hints', async () => {
    const r = await app.inject({
      url: '/rest/api/v1/image?orientation=auto&width=300&format=png',
      headers: { 'sec-ch-ua-mobile': '?1' },
    });
    assert.equal(r.statusCode, 200, r.body);
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.width, m.height], [300, 533]);
    assert.equal(r.headers['image-orientation'], 'portrait');
    assert.match(String(r.headers['accept-ch']), /Sec-CH-Viewport-Width/);
    assert.match(String(r.headers.vary), /Sec-CH-UA-Mobile/);
    assert.match(String(r.headers.vary), /User-Agent/);
    const desk = await app.inject({
      url: '/rest/api/v1/image?orientation=auto&text=hi&height=90&format=png',
      headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)' },
    });
    const d = await sharp(desk.rawPayload).metadata();
    assert.deepEqual([d.width, d.height], [160, 90]);
    assert.equal(desk.headers['image-orientation'], 'landscape');
  });
});

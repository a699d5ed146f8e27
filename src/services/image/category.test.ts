// Image categories: subdirectories of the image directory, picked with ?category=, listed by /list.
// Each directory's images have their own colour, so the pixels show where an answer came from.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { photo } from '../../../test/fixtures/image/images.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const URL_ = '/rest/api/v1/image';
type Rgb = [number, number, number];
const RED: Rgb = [230, 30, 30];
const GREEN: Rgb = [30, 200, 30];
const BLUE: Rgb = [30, 30, 230];
const YELLOW: Rgb = [230, 230, 30];
const MAGENTA: Rgb = [230, 30, 230];

/** Which of the fixture colours the centre pixel of an image is closest to. */
async function colourOf(body: Buffer): Promise<string> {
  const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
  const i = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * info.channels;
  const px = [data[i]!, data[i + 1]!, data[i + 2]!];
  const named: [string, Rgb][] = [
    ['red', RED],
    ['green', GREEN],
    ['blue', BLUE],
    ['yellow', YELLOW],
    ['magenta', MAGENTA],
  ];
  // The photos fade to half brightness left to right: compare hues, not levels.
  const norm = (c: number[]) => c.map((v) => v / Math.max(1, ...c));
  const dist = (c: Rgb) => norm(c).reduce((s, v, k) => s + (v - norm(px)[k]!) ** 2, 0);
  return named.reduce((best, n) => (dist(n[1]) < dist(best[1]) ? n : best))[0];
}

describe('image categories', () => {
  let app: FastifyInstance;
  let root: string;
  let dir: string;
  const get = (query: string) => app.inject({ url: `${URL_}?${query}` });

  before(async () => {
    root = tempDir('devutil-image-cat-');
    dir = join(root, 'images');
    for (const d of ['cats/kittens', 'dogs', '__proto__', 'été', '../outside'])
      mkdirSync(join(dir, d), { recursive: true });
    for (const n of ['c1', 'c2', 'c3'])
      writeFileSync(join(dir, 'cats', `${n}.jpg`), await photo(120, 80, RED));
    writeFileSync(join(dir, 'cats', 'kittens', 'k1.png'), await photo(80, 80, RED, 'png'));
    for (const n of ['d1', 'd2']) writeFileSync(join(dir, 'dogs', `${n}.jpg`), await photo(120, 80, GREEN));
    writeFileSync(join(dir, 'sky.jpg'), await photo(120, 80, BLUE));
    writeFileSync(join(dir, '__proto__', 'p.jpg'), await photo(64, 64, YELLOW));
    writeFileSync(join(dir, 'été', 'e.jpg'), await photo(64, 64, BLUE));
    // Outside the image directory, and a symlink to it inside: neither may ever be served.
    writeFileSync(join(root, 'outside', 'secret.jpg'), await photo(64, 64, MAGENTA));
    symlinkSync(join(root, 'outside'), join(dir, 'link'));
    // Links back up: followed, two of them would make 2^40 paths before ELOOP.
    symlinkSync('..', join(dir, 'dogs', 'up'));
    symlinkSync('..', join(dir, 'dogs', 'up2'));
    app = await buildTestServer({ overrides: { image: { dir, rateLimit: 'off', dirRescanSec: 1 } } });
  });
  after(async () => app.close());

  it('lists the categories with their sizes, and each image with its category', async () => {
    const d = (await app.inject({ url: `${URL_}/list` })).json().data;
    assert.deepEqual(d.categories, [
      { name: '__proto__', total: 1, downloadUrl: `http://localhost:8080${URL_}?category=__proto__` },
      { name: 'cats', total: 4, downloadUrl: `http://localhost:8080${URL_}?category=cats` },
      { name: 'dogs', total: 2, downloadUrl: `http://localhost:8080${URL_}?category=dogs` },
      { name: 'été', total: 1, downloadUrl: `http://localhost:8080${URL_}?category=%C3%A9t%C3%A9` },
    ]);
    assert.equal(d.total, 9, 'the whole catalogue is still listed without a category');
    const sky = d.images.find((i: { id: string }) => i.id === 'sky');
    assert.equal(sky.category, null);
    assert.equal(d.images.find((i: { id: string }) => i.id === 'cats/kittens/k1').category, 'cats');
    assert.ok(!JSON.stringify(d).includes('secret'), 'nothing from outside the directory');
  });

  it('lists one category with ?category=, paging within it', async () => {
    const r = await app.inject({ url: `${URL_}/list?category=cats&limit=3` });
    const d = r.json().data;
    assert.equal(d.category, 'cats');
    assert.equal(d.source, 'dir');
    assert.equal(d.total, 4);
    assert.deepEqual(
      d.images.map((i: { id: string }) => i.id),
      ['cats/c1', 'cats/c2', 'cats/c3'],
    );
    assert.match(r.headers.link as string, /\/list\?page=2&limit=3&category=cats>; rel="next"/);
    const u = (await app.inject({ url: `${URL_}/list?category=%C3%A9t%C3%A9` })).json().data;
    assert.deepEqual(
      u.images.map((i: { id: string }) => i.id),
      ['été/e'],
    );
  });

  it('serves only that directory for random picks and for any id', async () => {
    for (const [category, colour, prefix] of [
      ['cats', 'red', 'cats/'],
      ['dogs', 'green', 'dogs/'],
    ] as const) {
      for (let i = 0; i < 12; i++) {
        const q =
          i % 2 ? `category=${category}&width=32&height=32` : `category=${category}&id=x${i}&width=32`;
        const r = await get(q);
        assert.equal(r.statusCode, 200, q);
        assert.equal(r.headers['image-source'], 'dir');
        assert.ok(decodeURIComponent(r.headers['image-id'] as string).startsWith(prefix), q);
        assert.equal(await colourOf(r.rawPayload), colour, q);
      }
    }
    const p = await get('category=__proto__&width=16');
    assert.equal(p.statusCode, 200);
    assert.equal(await colourOf(p.rawPayload), 'yellow', 'a directory named __proto__ is just a name');
  });

  it('takes an id by its name within the category or in full, and never one from elsewhere', async () => {
    for (const q of ['category=cats&id=c2', 'category=cats&id=cats/c2']) {
      const r = await get(`${q}&width=40`);
      assert.equal(decodeURIComponent(r.headers['image-id'] as string), 'cats/c2', q);
    }
    const other = await get('category=dogs&id=cats/c2&width=40');
    assert.ok(decodeURIComponent(other.headers['image-id'] as string).startsWith('dogs/'));
    assert.equal(await colourOf(other.rawPayload), 'green');
  });

  it('keeps each id on the same image while other directories change', async () => {
    const ids = Array.from({ length: 16 }, (_, i) => `stable-${i}`);
    const pick = async (id: string) => {
      const r = await get(`category=cats&id=${id}&width=24&height=24`);
      return `${r.headers['image-id']} ${r.headers.etag}`;
    };
    const first = await Promise.all(ids.map(pick));
    assert.ok(new Set(first).size > 1, 'the ids spread over the category');
    writeFileSync(join(dir, 'dogs', 'd3.jpg'), await photo(100, 100, GREEN));
    writeFileSync(join(dir, 'moon.jpg'), await photo(100, 100, BLUE));
    mkdirSync(join(dir, 'birds'));
    writeFileSync(join(dir, 'birds', 'b1.jpg'), await photo(100, 100, YELLOW));
    await waitFor(async () => {
      const d = (await app.inject({ url: `${URL_}/list` })).json().data;
      return d.total === 12 && d.categories.some((c: { name: string }) => c.name === 'birds');
    }, 'the new files to be scanned');
    assert.deepEqual(await Promise.all(ids.map(pick)), first);
    const b = await get('category=birds&width=16');
    assert.equal(await colourOf(b.rawPayload), 'yellow');
  });

  const hostile: [string, number][] = [
    ['category=..', 400],
    ['category=.', 400],
    ['category=%2e%2e', 400],
    ['category=%2E', 400],
    ['category=../outside', 400],
    ['category=..%2Foutside', 400],
    ['category=cats/..', 400],
    ['category=cats%5C..', 400],
    ['category=%2Fetc', 400],
    ['category=', 400],
    ['category=%00', 400],
    ['category=cats%0d%0aX-Evil:%201', 400],
    [`category=${'x'.repeat(256)}`, 400],
    ['category=cats&category=dogs', 400],
    [`category=${'x'.repeat(255)}`, 404],
    ['category=constructor', 404],
    ['category=toString', 404],
    ['category=hasOwnProperty', 404],
    ['category=valueOf', 404],
    ['category=outside', 404],
    ['category=link', 404],
    ['category=kittens', 404],
    ['category=CATS', 404],
    ['category=cats%20', 404],
    ['category=%D1%81ats', 404], // Cyrillic с
  ];
  for (const [q, status] of hostile) {
    for (const path of [URL_, `${URL_}/list`]) {
      it(`answers ${path.slice(13)}?${q.slice(0, 40)} with ${status} in the v1 envelope`, async () => {
        const r = await app.inject({ url: `${path}?${q}&width=16` });
        assert.equal(r.statusCode, status);
        const body = r.json();
        assert.deepEqual(Object.keys(body).sort(), ['data', 'message', 'status']);
        assert.equal(body.status, 0);
        assert.equal(body.data, null);
        assert.ok(!r.body.includes(root), 'no file path in the answer');
      });
    }
  }
});

describe('image categories without a directory', () => {
  it('has none: an empty list and 404 for any category, never a generated image', async () => {
    const app = await buildTestServer();
    try {
      const d = (await app.inject({ url: `${URL_}/list` })).json().data;
      assert.deepEqual(d.categories, []);
      const r = await app.inject({ url: `${URL_}?category=cats&width=16` });
      assert.equal(r.statusCode, 404);
      assert.deepEqual(r.json(), { status: 0, message: 'no such image category', data: null });
    } finally {
      await app.close();
    }
  });

  it('does not fall through to other sources when a category image cannot be read', async () => {
    const dir = tempDir('devutil-image-cat-gone-');
    mkdirSync(join(dir, 'only'));
    writeFileSync(join(dir, 'only', 'one.jpg'), await photo(64, 64, RED));
    const app = await buildTestServer({ overrides: { image: { dir, dirRescanSec: 0 } } });
    try {
      rmSync(join(dir, 'only', 'one.jpg'));
      const r = await app.inject({ url: `${URL_}?category=only&id=z&width=16` });
      // 503 while the scan still lists the file, 404 once the category is gone: never a substitute.
      assert.ok([503, 404].includes(r.statusCode), String(r.statusCode));
      assert.equal(r.headers['image-source'], undefined);
    } finally {
      await app.close();
    }
  });
});

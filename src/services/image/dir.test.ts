import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { makeImageDir, photo } from '../../../test/fixtures/image/images.ts';
import { buildTestServer, LogCapture, tempDir } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const URL_ = '/rest/api/v1/image';

async function centre(body: Buffer): Promise<[number, number, number]> {
  const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
  const i = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * info.channels;
  return [data[i]!, data[i + 1]!, data[i + 2]!];
}

describe('image directory source', () => {
  let app: FastifyInstance;
  let dir: string;
  const logs = new LogCapture();
  before(async () => {
    dir = tempDir('devutil-image-dir-');
    await makeImageDir(dir);
    app = await buildTestServer({ logs, overrides: { image: { dir, rateLimit: 'off', dirRescanSec: 1 } } });
  });
  after(async () => app.close());

  it('lists the usable images with sidecar attribution and skips hostile files', async () => {
    const r = await app.inject({ url: `${URL_}/list` });
    const d = r.json().data;
    assert.equal(d.source, 'dir');
    assert.deepEqual(
      d.images.map((i: { id: string }) => i.id),
      ['landscape', 'portrait', 'sub/square'],
    );
    const land = d.images[0];
    assert.deepEqual(
      [land.width, land.height, land.author, land.license, land.url],
      [800, 600, 'Ada Example', 'CC-BY-4.0', 'https://example.org/ada'],
    );
    assert.equal(d.images[1].author, null);
    const ready = await app.inject({ url: '/readyz' });
    assert.deepEqual(ready.json().checks['image-dir'], { ok: true, detail: '3 images', affects: ['image'] });
    const text = logs.text();
    for (const f of ['corrupt.jpg', 'disguised.png', 'bomb.png'])
      assert.match(text, new RegExp(`"file":"${f}"`));
    const skipped = logs.lines.filter((l) => l.includes('image skipped'));
    assert.equal(skipped.length, 3);
    for (const l of skipped)
      assert.ok(!l.includes(dir), 'skip warnings name files relative to the directory');
  });

  it('serves a listed id from the directory (its pixels, its proportions for width only)', async () => {
    const r = await app.inject({ url: `${URL_}?id=landscape&width=640` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['image-source'], 'dir');
    assert.equal(r.headers['image-id'], 'landscape');
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.width, m.height], [640, 480]);
    const [red, green, blue] = await centre(r.rawPayload);
    assert.ok(red > 120 && green < 60 && blue < 60, `red-ish centre, got ${red},${green},${blue}`);
    const p = await app.inject({ url: `${URL_}?id=portrait&height=300` });
    const pm = await sharp(p.rawPayload).metadata();
    assert.deepEqual([pm.width, pm.height], [200, 300]);
  });

  it('maps any other id onto one of the images, stably, and serves 1920x1080 by default', async () => {
    const a = await app.inject({ url: `${URL_}?id=whatever-123` });
    const b = await app.inject({ url: `${URL_}?id=whatever-123` });
    assert.equal(a.headers['image-source'], 'dir');
    assert.ok(a.rawPayload.equals(b.rawPayload));
    const m = await sharp(a.rawPayload).metadata();
    assert.deepEqual([m.format, m.width, m.height], ['webp', 1920, 1080]);
    assert.ok(
      ['landscape', 'portrait', 'sub/square'].includes(decodeURIComponent(a.headers['image-id'] as string)),
    );
  });

  it('picks among the directory images without an id', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 30 && seen.size < 2; i++) {
      const r = await app.inject({ url: `${URL_}?width=48&height=48` });
      assert.equal(r.headers['image-source'], 'dir');
      assert.equal(r.headers['cache-control'], 'no-store');
      seen.add(r.headers['image-id'] as string);
    }
    assert.ok(seen.size >= 2, `random picks vary: ${[...seen].join(',')}`);
  });

  it('rescans on change: a new file is served, a changed file is re-rendered', async () => {
    writeFileSync(join(dir, 'added.jpg'), await photo(300, 100, [240, 240, 20]));
    await waitFor(async () => {
      const r = await app.inject({ url: `${URL_}/list` });
      return r.json().data.images.some((i: { id: string }) => i.id === 'added');
    }, 'added.jpg in the list');
    const r = await app.inject({ url: `${URL_}?id=added&width=90` });
    assert.deepEqual(
      await sharp(r.rawPayload)
        .metadata()
        .then((m) => [m.width, m.height]),
      [90, 30],
    );
    writeFileSync(join(dir, 'added.jpg'), await photo(100, 100, [20, 20, 240]));
    await waitFor(async () => {
      const x = await app.inject({ url: `${URL_}?id=added&width=90` });
      const m = await sharp(x.rawPayload).metadata();
      return m.height === 90;
    }, 'the replaced added.jpg to be served');
  });
});

describe('source fall-through', () => {
  it('serves from the generator when the directory is empty, counts the failure and caches briefly', async () => {
    const empty = tempDir('devutil-image-empty-');
    const app = await buildTestServer({ overrides: { image: { dir: empty, dirRescanSec: 0 } } });
    try {
      const r = await app.inject({ url: `${URL_}?id=abc&width=64&height=64` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['image-source'], 'generator');
      assert.equal(r.headers['cache-control'], 'public, max-age=60');
      const metrics = await app.inject({ url: '/metrics' });
      assert.match(metrics.body, /devutil_image_source_failures_total\{source="dir"\} [1-9]/);
      assert.match(metrics.body, /devutil_image_served_total\{source="generator",cache="miss"\} 1/);
    } finally {
      await app.close();
    }
  });

  it('falls through when a listed file turns unreadable after the scan', async () => {
    const d = tempDir('devutil-image-gone-');
    writeFileSync(join(d, 'only.jpg'), await photo(64, 64, [10, 10, 10]));
    const app = await buildTestServer({ overrides: { image: { dir: d, dirRescanSec: 0 } } });
    try {
      // Removing the file may or may not reach the watcher before the request; either way the
      // generator must answer.
      rmSync(join(d, 'only.jpg'));
      const r = await app.inject({ url: `${URL_}?id=only&width=32&height=32` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['image-source'], 'generator');
    } finally {
      await app.close();
    }
  });

  it('never follows a symlink out of the directory or round a loop', async () => {
    const root = tempDir('devutil-image-links-');
    mkdirSync(join(root, 'in', 'sub'), { recursive: true });
    mkdirSync(join(root, 'out'));
    writeFileSync(join(root, 'in', 'sub', 'mine.jpg'), await photo(32, 32, [200, 20, 20]));
    writeFileSync(join(root, 'out', 'secret.jpg'), await photo(32, 32, [20, 200, 20]));
    symlinkSync(join(root, 'out'), join(root, 'in', 'outside'));
    symlinkSync(join(root, 'out', 'secret.jpg'), join(root, 'in', 'secret.jpg'));
    symlinkSync('..', join(root, 'in', 'sub', 'up'));
    symlinkSync('..', join(root, 'in', 'sub', 'up2'));
    const app = await buildTestServer({ overrides: { image: { dir: join(root, 'in'), dirRescanSec: 0 } } });
    try {
      const d = (await app.inject({ url: `${URL_}/list` })).json().data;
      assert.deepEqual(
        d.images.map((i: { id: string }) => i.id),
        ['sub/mine'],
      );
      const r = await app.inject({ url: `${URL_}?id=outside/secret&width=8` });
      assert.equal(r.headers['image-id'], encodeURIComponent('sub/mine'));
    } finally {
      await app.close();
    }
  });

  it('refuses to start with no usable source', async () => {
    await assert.rejects(buildTestServer({ overrides: { image: { sources: ['dir'] } } }), /no usable source/);
  });
});

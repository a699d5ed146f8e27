import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { sceneOf } from './generator.ts';

const URL_ = '/rest/api/v1/image';

async function meta(body: Buffer) {
  return sharp(body).metadata();
}

describe('random image with the built-in generator (fresh install: no network, no directory)', () => {
  let app: FastifyInstance;
  before(async () => {
    // Defaults only: no DEVUTIL_IMAGE_DIR, no upstream URL.
    app = await buildTestServer({ overrides: { image: { rateLimit: 'off' } } });
  });
  after(async () => app.close());

  it('answers the default request with a valid 1920x1080 WebP that is not cacheable', async () => {
    const r = await app.inject({ url: URL_ });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'image/webp');
    const m = await meta(r.rawPayload);
    assert.equal(m.format, 'webp');
    assert.equal(m.width, 1920);
    assert.equal(m.height, 1080);
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(r.headers.etag, undefined);
    assert.equal(r.headers['image-source'], 'generator');
    assert.equal(r.rawPayload.subarray(0, 4).toString(), 'RIFF');
  });

  it('never renders a flat colour', async () => {
    const r = await app.inject({ url: `${URL_}?id=flat-check&width=320&height=180` });
    const s = await sharp(r.rawPayload).stats();
    const spread = s.channels.slice(0, 3).map((c) => c.max - c.min);
    assert.ok(Math.max(...spread) > 40, `channel ranges ${spread.join(',')}`);
  });

  it('gives the same bytes for id=abc twice and different bytes for id=abd', async () => {
    const a1 = await app.inject({ url: `${URL_}?id=abc` });
    const a2 = await app.inject({ url: `${URL_}?id=abc` });
    const b = await app.inject({ url: `${URL_}?id=abd` });
    assert.equal(a1.statusCode, 200);
    assert.ok(a1.rawPayload.equals(a2.rawPayload));
    assert.ok(!a1.rawPayload.equals(b.rawPayload));
    assert.equal(a1.headers.etag, a2.headers.etag);
    assert.notEqual(a1.headers.etag, b.headers.etag);
    assert.match(a1.headers['cache-control'] as string, /^public, max-age=\d+$/);
    assert.equal(a2.headers['x-cache'], 'HIT');
  });

  it('renders the same id identically after the caches are gone (a new server)', async () => {
    const fresh = await buildTestServer();
    try {
      const a = await app.inject({ url: `${URL_}?id=stable-id&width=400&height=300` });
      const b = await fresh.inject({ url: `${URL_}?id=stable-id&width=400&height=300` });
      assert.equal(b.headers['x-cache'], 'MISS');
      assert.ok(a.rawPayload.equals(b.rawPayload));
    } finally {
      await fresh.close();
    }
  });

  it('answers If-None-Match with 304 for an id', async () => {
    const r = await app.inject({ url: `${URL_}?id=etag-test&width=200&height=100` });
    const r2 = await app.inject({
      url: `${URL_}?id=etag-test&width=200&height=100`,
      headers: { 'if-none-match': `W/"nope", ${r.headers.etag}` },
    });
    assert.equal(r2.statusCode, 304);
    assert.equal(r2.body, '');
    const r3 = await app.inject({
      url: `${URL_}?id=etag-test&width=200&height=100`,
      headers: { 'if-none-match': '"other"' },
    });
    assert.equal(r3.statusCode, 200);
  });

  it('keeps the source proportions for width only and height only', async () => {
    const id = 'proportions';
    const s = sceneOf(id);
    const w = await app.inject({ url: `${URL_}?id=${id}&width=640` });
    const mw = await meta(w.rawPayload);
    assert.equal(mw.width, 640);
    assert.equal(mw.height, Math.round((640 * s.height) / s.width));
    const h = await app.inject({ url: `${URL_}?id=${id}&height=300` });
    const mh = await meta(h.rawPayload);
    assert.equal(mh.height, 300);
    assert.equal(mh.width, Math.round((300 * s.width) / s.height));
  });

  it('crops to exactly 300x300 when both sides are given', async () => {
    const r = await app.inject({ url: `${URL_}?width=300&height=300` });
    const m = await meta(r.rawPayload);
    assert.deepEqual([m.width, m.height], [300, 300]);
  });

  it('encodes jpeg, png and avif on request and names the file', async () => {
    for (const [format, want] of [
      ['jpeg', 'jpeg'],
      ['jpg', 'jpeg'],
      ['png', 'png'],
      ['avif', 'heif'],
    ] as const) {
      const r = await app.inject({ url: `${URL_}?id=fmt&width=160&height=90&format=${format}` });
      assert.equal(r.statusCode, 200, format);
      assert.equal((await meta(r.rawPayload)).format, want);
      assert.match(
        r.headers['content-disposition'] as string,
        /^inline; filename="fmt-160x90\.(jpg|png|avif)"$/,
      );
    }
  });

  it('applies grayscale and blur', async () => {
    const plain = await app.inject({ url: `${URL_}?id=fx&width=200&height=200&format=png` });
    const gray = await app.inject({ url: `${URL_}?id=fx&width=200&height=200&format=png&grayscale` });
    const gs = await sharp(gray.rawPayload).stats();
    assert.ok(
      gs.channels.length <= 2 || gs.channels[0]!.mean === gs.channels[1]!.mean,
      'gray has equal channels',
    );
    const ps = await sharp(plain.rawPayload).stats();
    assert.ok(ps.channels[0]!.mean !== ps.channels[2]!.mean, 'plain is coloured');
    const blurred = await app.inject({ url: `${URL_}?id=fx&width=200&height=200&format=png&blur` });
    const bs = await sharp(blurred.rawPayload).stats();
    assert.ok(bs.sharpness < ps.sharpness, `blur lowers sharpness ${bs.sharpness} < ${ps.sharpness}`);
    assert.match(blurred.headers['content-disposition'] as string, /-blur_5\.png"$/);
  });

  it('ignores unknown parameters such as a cache buster', async () => {
    const r = await app.inject({ url: `${URL_}?random=1&width=100&height=100` });
    assert.equal(r.statusCode, 200);
  });

  const hostile: [string, RegExp][] = [
    ['width=0', /width/],
    ['height=0', /height/],
    ['width=-5', /width/],
    ['width=abc', /width/],
    ['width=10.5', /width/],
    ['width=1e3', /width/],
    ['width=4097', /width/],
    ['height=99999999999', /height/],
    ['width=4096&height=4096', /pixels/],
    ['width=1&width=2', /width/],
    ['width=%20100', /width/],
    ['width=%EF%BC%91%EF%BC%90', /width/], // fullwidth digits
    ['blur=0', /blur/],
    ['blur=11', /blur/],
    ['blur=x', /blur/],
    ['format=gif', /format/],
    ['format=../../etc/passwd', /format/],
    [`id=${'x'.repeat(201)}`, /id/],
    ['id=', /id/],
    ['id=a%0d%0aSet-Cookie:%20x=1', /id/],
    ['id=%00', /id/],
  ];
  for (const [q, msg] of hostile) {
    it(`refuses ?${q.slice(0, 50)} with 400 in the v1 envelope`, async () => {
      const r = await app.inject({ url: `${URL_}?${q}` });
      assert.equal(r.statusCode, 400);
      const body = r.json();
      assert.deepEqual(Object.keys(body).sort(), ['data', 'message', 'status']);
      assert.equal(body.status, 0);
      assert.equal(body.data, null);
      assert.match(body.message, msg);
      assert.equal(r.headers['set-cookie'], undefined);
    });
  }

  it('takes unicode and path-like ids safely (hashed, never a path)', async () => {
    for (const id of ['../../etc/passwd', 'ünïcödé-🙂', 'a"b;c', '%2e%2e%2f']) {
      const r = await app.inject({ url: `${URL_}?id=${encodeURIComponent(id)}&width=64&height=64` });
      assert.equal(r.statusCode, 200, id);
      assert.match(
        r.headers['content-disposition'] as string,
        /^inline; filename="[A-Za-z0-9._-]+-64x64\.webp"$/,
      );
    }
  });

  it('answers HEAD with headers only and a wrong method with 405 in the v1 envelope', async () => {
    const h = await app.inject({ method: 'HEAD', url: `${URL_}?id=head&width=64&height=64` });
    assert.equal(h.statusCode, 200);
    assert.equal(h.headers['content-type'], 'image/webp');
    assert.equal(h.body, '');
    const p = await app.inject({ method: 'POST', url: URL_ });
    assert.equal(p.statusCode, 405);
    assert.deepEqual(Object.keys(p.json()).sort(), ['data', 'message', 'status']);
  });

  it('lists the generator catalogue with paging and Link headers', async () => {
    const r = await app.inject({ url: `${URL_}/list?page=2&limit=3` });
    assert.equal(r.statusCode, 200);
    const body = r.json();
    assert.equal(body.status, 1);
    assert.equal(body.data.source, 'generator');
    assert.equal(body.data.total, 1000);
    assert.deepEqual(
      body.data.images.map((i: { id: string }) => i.id),
      ['3', '4', '5'],
    );
    const first = body.data.images[0];
    const scene = sceneOf('3');
    assert.deepEqual([first.width, first.height], [scene.width, scene.height], "the artwork's native size");
    assert.equal(first.license, 'CC0-1.0');
    assert.match(first.downloadUrl, /\/rest\/api\/v1\/image\?id=3$/);
    assert.match(r.headers.link as string, /page=1&limit=3>; rel="prev", <.*page=3&limit=3>; rel="next"/);
    // The listed id serves the listed image: its proportions match.
    const img = await app.inject({ url: `${URL_}?id=3&width=300` });
    const m = await meta(img.rawPayload);
    assert.equal(m.height, Math.round((300 * first.height) / first.width));
  });

  it('clamps silly list paging instead of failing', async () => {
    const r = await app.inject({ url: `${URL_}/list?page=-1&limit=100000` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.json().data.page, 1);
    assert.equal(r.json().data.limit, 100);
  });
});

describe('image limits', () => {
  it('charges the rate limit and answers 429 with Retry-After in the v1 envelope', async () => {
    const app = await buildTestServer({ overrides: { image: { rateLimit: '2/min' } } });
    try {
      const url = `${URL_}?id=rl&width=32&height=32`;
      const a = await app.inject({ url, remoteAddress: '198.51.100.7' });
      const b = await app.inject({ url, remoteAddress: '198.51.100.7' });
      const c = await app.inject({ url, remoteAddress: '198.51.100.7' });
      const other = await app.inject({ url, remoteAddress: '198.51.100.8' });
      assert.equal(a.statusCode, 200);
      assert.equal(b.statusCode, 200);
      assert.equal(c.statusCode, 429);
      assert.ok(Number(c.headers['retry-after']) >= 1);
      assert.deepEqual(c.json(), {
        status: 0,
        message: `rate limit exceeded: 2 requests per 60s; retry in ${c.headers['retry-after']}s`,
        data: null,
      });
      assert.equal(other.statusCode, 200);
      const list = await app.inject({ url: `${URL_}/list`, remoteAddress: '198.51.100.7' });
      assert.equal(list.statusCode, 429);
    } finally {
      await app.close();
    }
  });

  it('answers 503 with Retry-After when the sharp pool and its queue are full', async () => {
    const app = await buildTestServer({
      overrides: { image: { rateLimit: 'off', concurrency: 1, queueLength: 0, retryAfterSec: 3 } },
    });
    try {
      const rs = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          app.inject({ url: `${URL_}?id=busy-${i}&width=1600&height=1200` }),
        ),
      );
      const codes = rs.map((r) => r.statusCode);
      assert.ok(codes.includes(200), codes.join(','));
      const busy = rs.filter((r) => r.statusCode === 503);
      assert.ok(busy.length >= 1, codes.join(','));
      for (const r of busy) {
        assert.equal(r.headers['retry-after'], '3');
        assert.equal(r.json().status, 0);
      }
      assert.ok(
        codes.every((c) => c === 200 || c === 503),
        codes.join(','),
      );
    } finally {
      await app.close();
    }
  });

  it('honours smaller configured size caps', async () => {
    const app = await buildTestServer({ overrides: { image: { maxWidth: 500, maxPixels: 10_000 } } });
    try {
      assert.equal((await app.inject({ url: `${URL_}?width=501` })).statusCode, 400);
      assert.equal((await app.inject({ url: `${URL_}?width=100&height=101` })).statusCode, 400);
      // Width only: the derived height is clamped by the pixel cap, the width stays as asked.
      const r = await app.inject({ url: `${URL_}?id=tall&width=100` });
      const m = await meta(r.rawPayload);
      assert.equal(m.width, 100);
      assert.ok((m.height ?? 0) * 100 <= 10_000);
    } finally {
      await app.close();
    }
  });
});

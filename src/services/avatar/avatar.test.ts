import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { assertNoInternals } from '../../../test/helpers/leaks.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';
import { emailHashes } from './seed.ts';

const MD5 = '0bc83cb571cd1c50ba6f3e8a78ef1346';
const OTHER = '40f8d096a3777232204cb3f796c577b7';
const TOKEN = testSecret('avatar-admin-');
const KEYWORDS = [
  'mp',
  'identicon',
  'monsterid',
  'wavatar',
  'retro',
  'robohash',
  'blank',
  'initials',
  'color',
];

async function dims(buf: Buffer): Promise<[number, number, string]> {
  const m = await sharp(buf).metadata();
  return [m.width ?? 0, m.height ?? 0, m.format ?? ''];
}

/** A photo-like test image: not square, with an EXIF orientation tag and a comment. */
function photo(width: number, height: number, colour: { r: number; g: number; b: number }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: colour } })
    .jpeg()
    .withMetadata({ orientation: 6, exif: { IFD0: { Copyright: 'secret-camera-owner' } } })
    .toBuffer();
}

describe('avatar service', () => {
  let app: FastifyInstance;
  let hosted: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    app = await buildTestServer({
      logs,
      overrides: {
        avatar: {
          upstream: 'none',
          adminToken: TOKEN,
          redirectAllow: ['https://ui-avatars.com/api/', '.example.org'],
          maxInputPixels: 1_000_000,
        },
      },
    });
    hosted = await buildTestServer({ overrides: { avatar: { upstream: 'none', host: 'avatars.test' } } });
  });
  after(async () => {
    await app?.close();
    await hosted?.close();
  });

  it('answers a WordPress-style URL /avatar/<md5>?s=96&d=mm&r=g with a 96x96 PNG', async () => {
    const r = await app.inject({ url: `/avatar/${MD5}?s=96&d=mm&r=g` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'image/png');
    assert.deepEqual(await dims(r.rawPayload), [96, 96, 'png']);
    assert.equal(r.headers['cache-control'], 'public, max-age=60, must-revalidate');
    assert.match(r.headers.etag as string, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(r.headers['access-control-allow-origin'], '*');
  });

  it('gives a stable identicon per hash that differs between hashes', async () => {
    const a1 = await app.inject({ url: `/avatar/${MD5}?d=identicon` });
    const a2 = await app.inject({ url: `/avatar/${MD5.toUpperCase()}?d=identicon&v=2` });
    const b = await app.inject({ url: `/avatar/${OTHER}?d=identicon` });
    assert.ok(a1.rawPayload.equals(a2.rawPayload));
    assert.ok(!a1.rawPayload.equals(b.rawPayload));
    const [pa, pb] = await Promise.all([a1, b].map((r) => sharp(r.rawPayload).raw().toBuffer()));
    assert.ok(!pa!.equals(pb!), 'the pixels differ, not just the bytes');
  });

  it('answers d=404 for an unknown hash with 404 and a short cache time', async () => {
    const r = await app.inject({ url: `/avatar/${OTHER}?d=404` });
    assert.equal(r.statusCode, 404);
    assert.equal(r.headers['cache-control'], 'public, max-age=60, must-revalidate');
    assert.ok(r.rawPayload.length < 100);
    const bad = await app.inject({ url: '/avatar/not-a-hash?d=404' });
    assert.equal(bad.statusCode, 404);
  });

  for (const d of KEYWORDS) {
    it(`draws d=${d} exactly s x s, byte-identical on repeat, at 1, 16, 80 and 512 px`, async () => {
      for (const s of [1, 16, 80, 512]) {
        const url = `/avatar/${OTHER}?d=${d}&s=${s}&name=Ada+Lovelace`;
        const r = await app.inject({ url });
        assert.equal(r.statusCode, 200, url);
        assert.deepEqual(await dims(r.rawPayload), [s, s, 'png'], url);
        // A fresh server renders the same bytes: determinism, not just the cache.
        if (s === 80) {
          const again = await hosted.inject({ url, headers: { host: 'avatars.test' } });
          assert.ok(again.rawPayload.equals(r.rawPayload), `${url} is deterministic`);
        }
      }
    });
  }

  it('shares one cached mp image (and ETag) between all unknown hashes', async () => {
    const a = await app.inject({ url: `/avatar/${'1'.repeat(32)}?d=mm&s=40` });
    const b = await app.inject({ url: `/avatar/${'2'.repeat(32)}?d=mp&s=40` });
    assert.equal(a.headers.etag, b.headers.etag);
    assert.ok(a.rawPayload.equals(b.rawPayload));
    const c = await app.inject({ url: `/avatar/${'2'.repeat(32)}?d=retro&s=40` });
    const d = await app.inject({ url: `/avatar/${'1'.repeat(32)}?d=retro&s=40` });
    assert.notEqual(c.headers.etag, d.headers.etag);
  });

  it('serves the format of the extension at the exact size', async () => {
    const cases: [string, string, string][] = [
      ['.jpg', 'image/jpeg', 'jpeg'],
      ['.jpeg', 'image/jpeg', 'jpeg'],
      ['.png', 'image/png', 'png'],
      ['.webp', 'image/webp', 'webp'],
      ['.gif', 'image/gif', 'gif'],
    ];
    for (const [ext, type, fmt] of cases) {
      const r = await app.inject({ url: `/avatar/${MD5}${ext}?d=retro&s=33` });
      assert.equal(r.headers['content-type'], type);
      assert.deepEqual(await dims(r.rawPayload), [33, 33, fmt]);
    }
  });

  it('clamps sizes above 2048 and treats s=0 as 80', async () => {
    const big = await app.inject({ url: `/avatar/${MD5}?d=color&size=99999` });
    assert.deepEqual(await dims(big.rawPayload), [2048, 2048, 'png']);
    const zero = await app.inject({ url: `/avatar/${MD5}?d=color&s=0` });
    assert.deepEqual(await dims(zero.rawPayload), [80, 80, 'png']);
  });

  it('serves /avatar and /avatar/ as an unknown user (initials from name=)', async () => {
    for (const url of ['/avatar?d=initials&name=Bob', '/avatar/?d=initials&name=Bob']) {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 200, url);
      assert.deepEqual(await dims(r.rawPayload), [80, 80, 'png']);
    }
    const blank = await app.inject({ url: '/avatar/?d=blank&s=10' });
    const { data } = await sharp(blank.rawPayload).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    assert.ok(
      data.every((v, i) => i % 4 !== 3 || v === 0),
      'blank is fully transparent',
    );
  });

  it('answers If-None-Match with 304 and HEAD with the headers only', async () => {
    const url = `/avatar/${MD5}?d=wavatar&s=64`;
    const r = await app.inject({ url });
    const etag = r.headers.etag as string;
    const nm = await app.inject({ url, headers: { 'if-none-match': etag } });
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.rawPayload.length, 0);
    assert.equal(nm.headers.etag, etag);
    const weak = await app.inject({ url, headers: { 'if-none-match': `"x", W/${etag}` } });
    assert.equal(weak.statusCode, 304);
    const other = await app.inject({ url, headers: { 'if-none-match': '"nope"' } });
    assert.equal(other.statusCode, 200);
    const head = await app.inject({ method: 'HEAD', url });
    assert.equal(head.statusCode, 200);
    assert.equal(head.rawPayload.length, 0);
    assert.equal(head.headers.etag, etag);
    assert.equal(head.headers['content-type'], 'image/png');
    const sized = await app.inject({ url: `/avatar/${MD5}?d=wavatar&s=65` });
    assert.notEqual(sized.headers.etag, etag);
  });

  it('redirects d=<url> only to allow-listed targets and draws the default otherwise', async () => {
    const ok = await app.inject({
      url: `/avatar/${OTHER}?d=${encodeURIComponent('https://ui-avatars.com/api/Jo')}`,
    });
    assert.equal(ok.statusCode, 302);
    assert.equal(ok.headers.location, 'https://ui-avatars.com/api/Jo');
    const sub = await app.inject({
      url: `/avatar/${OTHER}?d=${encodeURIComponent('https://cdn.example.org/a.png')}`,
    });
    assert.equal(sub.statusCode, 302);
    for (const evil of [
      'https://evil.com/a.png',
      'https://ui-avatars.com.evil.com/api/',
      'https://example.org.evil.com/a.png',
      '//evil.com/a.png',
      'javascript:alert(1)',
    ]) {
      const r = await app.inject({ url: `/avatar/${OTHER}?d=${encodeURIComponent(evil)}` });
      assert.equal(r.statusCode, 200, evil);
      assert.equal(r.headers.location, undefined, evil);
      assert.equal(r.headers['content-type'], 'image/png', evil);
    }
  });

  it('serves the same routes on the avatar host, paths with and without /avatar', async () => {
    const a = await hosted.inject({ url: `/avatar/${MD5}?d=retro`, headers: { host: 'avatars.test' } });
    const b = await hosted.inject({ url: `/avatar/${MD5}?d=retro`, headers: { host: 'localhost' } });
    assert.equal(a.statusCode, 200);
    assert.ok(a.rawPayload.equals(b.rawPayload));
    const bare = await hosted.inject({ url: `/${MD5}?d=retro`, headers: { host: 'avatars.test' } });
    assert.ok(bare.rawPayload.equals(a.rawPayload), 'the avatar host also answers /<hash>');
    const nope = await hosted.inject({ url: '/elsewhere/deeper', headers: { host: 'avatars.test' } });
    assert.equal(nope.statusCode, 404);
    assert.match(nope.headers['content-type'] as string, /^text\/plain/);
  });

  describe('uploads', () => {
    const email = ' Uploader@Example.com ';
    const { md5, sha256 } = emailHashes(email);
    const auth = { authorization: `Bearer ${TOKEN}` };

    it('refuses uploads without the admin token', async () => {
      const img = await photo(40, 40, { r: 255, g: 0, b: 0 });
      const none = await app.inject({
        method: 'PUT',
        url: `/avatar/${md5}`,
        payload: img,
        headers: { 'content-type': 'image/jpeg' },
      });
      assert.equal(none.statusCode, 401);
      const wrong = await app.inject({
        method: 'PUT',
        url: `/avatar/${md5}`,
        payload: img,
        headers: { 'content-type': 'image/jpeg', authorization: 'Bearer nope' },
      });
      assert.equal(wrong.statusCode, 401);
      const off = await hosted.inject({
        method: 'PUT',
        url: `/avatar/${md5}`,
        payload: img,
        headers: { 'content-type': 'image/jpeg', ...auth },
      });
      assert.equal(off.statusCode, 403);
      const del = await app.inject({ method: 'DELETE', url: `/avatar/${md5}` });
      assert.equal(del.statusCode, 401);
    });

    it('serves an uploaded avatar instead of the generated one, by MD5 and SHA-256', async () => {
      const before = await app.inject({ url: `/avatar/${md5}?d=identicon&s=50` });
      assert.equal(before.headers['x-avatar-source'], 'generated');
      const img = await photo(300, 200, { r: 250, g: 20, b: 20 });
      const put = await app.inject({
        method: 'PUT',
        url: `/avatar/${md5}`,
        payload: img,
        headers: { 'content-type': 'image/jpeg', 'x-avatar-email': email, ...auth },
      });
      assert.equal(put.statusCode, 201, put.body);
      const stored = put.json<Record<string, unknown>>();
      assert.match(String(stored['url']), new RegExp(`/avatar/${md5}$`));
      assert.deepEqual({ ...stored, url: '' }, { sha256, md5, rating: 'g', size: 200, url: '' });
      for (const h of [md5, sha256, sha256.toUpperCase()]) {
        const r = await app.inject({ url: `/avatar/${h}?d=identicon&s=50` });
        assert.equal(r.headers['x-avatar-source'], 'upload', h);
        assert.deepEqual(await dims(r.rawPayload), [50, 50, 'png']);
        const { data } = await sharp(r.rawPayload).raw().toBuffer({ resolveWithObject: true });
        assert.ok(data[0]! > 200 && data[1]! < 60, 'the uploaded red image is served');
        assert.notEqual(r.headers.etag, before.headers.etag);
        assert.ok(r.headers['last-modified']);
      }
      const lm = (await app.inject({ url: `/avatar/${md5}?s=50` })).headers['last-modified'] as string;
      const ims = await app.inject({ url: `/avatar/${md5}?s=50`, headers: { 'if-modified-since': lm } });
      assert.equal(ims.statusCode, 304);
      const older = new Date(Date.parse(lm) - 60_000).toUTCString();
      const changed = await app.inject({
        url: `/avatar/${md5}?s=50`,
        headers: { 'if-modified-since': older },
      });
      assert.equal(changed.statusCode, 200);
      const forced = await app.inject({ url: `/avatar/${md5}?d=identicon&s=50&f=y` });
      assert.equal(forced.headers['x-avatar-source'], 'generated');
      const big = await app.inject({ url: `/avatar/${md5}.jpg?s=512` });
      assert.deepEqual(await dims(big.rawPayload), [512, 512, 'jpeg']);
      const meta = await sharp(big.rawPayload).metadata();
      assert.equal(meta.exif, undefined, 'no EXIF reaches clients');
    });

    it('hides an upload rated above r= and shows it when r allows', async () => {
      const img = await photo(64, 64, { r: 0, g: 0, b: 250 });
      const form = new FormData();
      form.set('rating', 'pg');
      form.set('file', new Blob([new Uint8Array(img)], { type: 'image/jpeg' }), 'me.jpg');
      const req = new Request('http://x/', { method: 'POST', body: form });
      const body = Buffer.from(await req.arrayBuffer());
      const put = await app.inject({
        method: 'PUT',
        url: `/avatar/${OTHER}`,
        payload: body,
        headers: { 'content-type': req.headers.get('content-type')!, ...auth },
      });
      assert.equal(put.statusCode, 201, put.body);
      assert.equal(put.json().rating, 'pg');
      const g = await app.inject({ url: `/avatar/${OTHER}?d=404` });
      assert.equal(g.statusCode, 404);
      const pg = await app.inject({ url: `/avatar/${OTHER}?d=404&r=pg` });
      assert.equal(pg.statusCode, 200);
      assert.equal(pg.headers['x-avatar-source'], 'upload');
      const del = await app.inject({ method: 'DELETE', url: `/avatar/${OTHER}`, headers: auth });
      assert.equal(del.statusCode, 204);
      const gone = await app.inject({ url: `/avatar/${OTHER}?d=404&r=x` });
      assert.equal(gone.statusCode, 404);
      const again = await app.inject({ method: 'DELETE', url: `/avatar/${OTHER}`, headers: auth });
      assert.equal(again.statusCode, 404);
    });

    it('shows a replaced or deleted upload at once: new ETag, 304 only while unchanged', async () => {
      const hash = 'c'.repeat(32);
      const url = `/avatar/${hash}?d=404&s=40`;
      const put = (colour: { r: number; g: number; b: number }) =>
        photo(64, 64, colour).then((payload) =>
          app.inject({
            method: 'PUT',
            url: `/avatar/${hash}`,
            payload,
            headers: { 'content-type': 'image/jpeg', ...auth },
          }),
        );
      const red = { r: 250, g: 10, b: 10 };
      assert.equal((await put(red)).statusCode, 201);
      const first = await app.inject({ url });
      const etag = first.headers.etag as string;
      assert.equal(first.statusCode, 200);
      assert.equal((await app.inject({ url, headers: { 'if-none-match': etag } })).statusCode, 304);

      // Replaced within the same second by an image of the same size: still a new version.
      assert.equal((await put({ r: 10, g: 10, b: 250 })).statusCode, 201);
      const replaced = await app.inject({ url, headers: { 'if-none-match': etag } });
      assert.equal(replaced.statusCode, 200);
      assert.notEqual(replaced.headers.etag, etag);
      const { data } = await sharp(replaced.rawPayload).raw().toBuffer({ resolveWithObject: true });
      assert.ok(data[2]! > 200 && data[0]! < 60, 'the new blue image is served');
      const again = await app.inject({ url, headers: { 'if-none-match': replaced.headers.etag as string } });
      assert.equal(again.statusCode, 304);

      const del = await app.inject({ method: 'DELETE', url: `/avatar/${hash}`, headers: auth });
      assert.equal(del.statusCode, 204);
      assert.equal((await app.inject({ url })).statusCode, 404);
    });

    it('evicts the renderings of a changed upload from memory and disk', async () => {
      const hash = 'd'.repeat(32);
      const img = await photo(32, 32, { r: 20, g: 200, b: 20 });
      const upload = () =>
        app.inject({
          method: 'PUT',
          url: `/avatar/${hash}`,
          payload: img,
          headers: { 'content-type': 'image/jpeg', ...auth },
        });
      const renders = async () => {
        const m = (await app.inject({ url: '/metrics' })).body;
        return Number(/devutil_avatar_cache_total\{layer="render"\} (\d+)/.exec(m)?.[1] ?? 0);
      };
      const url = `/avatar/${hash}?d=404&s=30`;
      assert.equal((await upload()).statusCode, 201);
      const start = await renders();
      await app.inject({ url });
      await app.inject({ url });
      assert.equal(await renders(), start + 1, 'rendered once, then cached');
      // The same image again is the same version (same cache key): only eviction makes it render.
      assert.equal((await upload()).statusCode, 201);
      await app.inject({ url });
      assert.equal(await renders(), start + 2);
    });

    it('stores an MD5-only upload (no address) and finds it by that MD5', async () => {
      const hash = 'e'.repeat(32);
      const img = await photo(20, 20, { r: 250, g: 250, b: 0 });
      const put = await app.inject({
        method: 'PUT',
        url: `/avatar/${hash}.png`,
        payload: img,
        headers: { 'content-type': 'application/octet-stream', ...auth },
      });
      assert.equal(put.statusCode, 201, put.body);
      assert.equal(put.json().md5, hash);
      assert.match(put.json().sha256, /^[0-9a-f]{64}$/);
      const r = await app.inject({ url: `/avatar/${hash.toUpperCase()}?d=404&s=7` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['x-avatar-source'], 'upload');
      assert.deepEqual(await dims(r.rawPayload), [7, 7, 'png']);
    });

    it('refuses bad uploads with a one-line reason', async () => {
      const img = await photo(8, 8, { r: 1, g: 2, b: 3 });
      const cases: [string, Buffer | string, Record<string, string>, number][] = [
        [`/avatar/${md5}`, 'not an image at all', { 'content-type': 'image/png' }, 400],
        ['/avatar/not-a-hash', img, { 'content-type': 'image/jpeg' }, 400],
        [`/avatar/${md5}`, img, { 'content-type': 'image/jpeg', 'x-avatar-email': 'someone@else.com' }, 400],
        [`/avatar/${md5}?r=nc17`, img, { 'content-type': 'image/jpeg' }, 400],
        [`/avatar/${md5}`, img, { 'content-type': 'text/plain' }, 415],
        [`/avatar/${md5}`, 'x', { 'content-type': 'multipart/form-data; boundary=zz' }, 400],
        [
          `/avatar/${md5}`,
          '--zz\r\ncontent-disposition: form-data; name="rating"\r\n\r\ng\r\n--zz--\r\n',
          { 'content-type': 'multipart/form-data; boundary=zz' },
          400,
        ],
        [
          `/avatar/${md5}`,
          Buffer.concat([
            Buffer.from('--zz\r\ncontent-disposition: form-data; name="f"; filename="a.png"\r\n\r\n'),
            Buffer.alloc(11 * 1024 * 1024),
            Buffer.from('\r\n--zz--\r\n'),
          ]),
          { 'content-type': 'multipart/form-data; boundary=zz' },
          413,
        ],
        [`/avatar/${md5}`, Buffer.alloc(11 * 1024 * 1024), { 'content-type': 'image/png' }, 413],
        [
          `/avatar/${md5}`,
          await photo(1100, 1000, { r: 0, g: 0, b: 0 }),
          { 'content-type': 'image/jpeg' },
          413,
        ],
      ];
      for (const [url, payload, headers, status] of cases) {
        const r = await app.inject({ method: 'PUT', url, payload, headers: { ...headers, ...auth } });
        assert.equal(r.statusCode, status, `${url} ${headers['content-type']}: ${r.body}`);
        assert.match(r.headers['content-type'] as string, /^text\/plain/);
        assertNoInternals(r.body, `${url} ${headers['content-type']}`);
      }
    });

    it('never logs the admin token or the uploader address', () => {
      const text = logs.text();
      assert.ok(text.includes('avatar uploaded'));
      assert.ok(!text.includes(TOKEN));
      assert.ok(!text.toLowerCase().includes('uploader@example.com'));
    });
  });

  const hostile: [string, string, number][] = [
    ['path traversal', '/avatar/..%2f..%2fetc%2fpasswd?d=404', 404],
    ['traversal as hash with image default', '/avatar/..%2F..%2Fetc%2Fpasswd', 200],
    ['nested path', '/avatar/a/b/c', 404],
    ['NUL in hash', '/avatar/%00abc?d=identicon', 200],
    ['CRLF in d', `/avatar/${MD5}?d=https://ui-avatars.com/api/%0d%0aSet-Cookie:x=1`, 302],
    ['huge size', `/avatar/${MD5}?s=1e9&d=color`, 200],
    ['negative size', `/avatar/${MD5}?s=-1&d=color`, 200],
    ['array params', `/avatar/${MD5}?s=10&s=20&d=retro&d=mp`, 200],
    ['unicode name', `/avatar/${MD5}?d=initials&name=%F0%9F%98%80%E2%80%AE`, 200],
    ['long junk hash', `/avatar/${'z'.repeat(5000)}?d=identicon`, 200],
    ['proto keyword', `/avatar/${MD5}?d=constructor`, 200],
    ['bad extension', `/avatar/${MD5}.exe?d=retro`, 200],
  ];
  for (const [name, url, status] of hostile) {
    it(`survives ${name} with ${status}`, async () => {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, status, r.body.slice(0, 200));
      if (status === 200) assert.match(r.headers['content-type'] as string, /^image\//);
      if (status === 302) assert.ok(!/[\r\n]/.test(r.headers.location as string));
      assert.equal(r.headers['set-cookie'], undefined);
    });
  }

  it('refuses renders past the queue with 503 and Retry-After instead of piling up', async () => {
    const busy = await buildTestServer({
      overrides: { avatar: { upstream: 'none', renderConcurrency: 1, renderQueue: 0 } },
    });
    try {
      const all = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          busy.inject({ url: `/avatar/${i.toString(16).padStart(32, '0')}?d=robohash&s=2048` }),
        ),
      );
      const codes = all.map((r) => r.statusCode);
      assert.ok(codes.includes(200), codes.join());
      assert.ok(codes.includes(503), codes.join());
      const refused = all.find((r) => r.statusCode === 503)!;
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.match(refused.headers['content-type'] as string, /^text\/plain/);
    } finally {
      await busy.close();
    }
  });

  it('answers unsupported methods with 405 and Allow in plain text', async () => {
    const r = await app.inject({ method: 'POST', url: `/avatar/${MD5}` });
    assert.equal(r.statusCode, 405);
    assert.match(r.headers.allow as string, /GET/);
    assert.match(r.headers['content-type'] as string, /^text\/plain/);
  });
});

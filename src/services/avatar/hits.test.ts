import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, type Running, startTestServer } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const TOKEN = testSecret('avatar-admin-');
const auth = { authorization: `Bearer ${TOKEN}` };
/** Headers that differ between any two answers: per request or per second. */
const PER_REQUEST = ['x-request-id', 'date', 'expires'];

const without = (h: Record<string, unknown>, drop: string[]) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !drop.includes(k)));

describe('avatar cache hits (prepared answers)', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  const memoryHits = () =>
    app.ctx.metrics.caches.map((c) => c.stats()).find((s) => s.name === 'avatar')?.memoryHits ?? 0;
  before(async () => {
    app = await buildTestServer({ overrides: { avatar: { upstream: 'none', adminToken: TOKEN } } });
  });
  after(() => app?.close());

  it('answers a memory hit with the headers and bytes of the miss', async () => {
    const url = '/avatar/0bc83cb571cd1c50ba6f3e8a78ef1346.webp?d=retro&s=48';
    const miss = await app.inject({ url });
    const hits = memoryHits();
    const hit = await app.inject({ url });
    assert.equal(memoryHits(), hits + 1, 'the second answer came from the memory tier');
    assert.equal(hit.statusCode, 200);
    assert.deepEqual(without(hit.headers, PER_REQUEST), without(miss.headers, PER_REQUEST));
    assert.ok(hit.rawPayload.equals(miss.rawPayload));
    assert.equal(hit.headers['content-length'], String(miss.rawPayload.length));
    const head = await app.inject({ method: 'HEAD', url });
    assert.equal(head.rawPayload.length, 0);
    assert.deepEqual(without(head.headers, PER_REQUEST), without(miss.headers, PER_REQUEST));
  });

  it('answers a conditional request on a hit with 304, the same ETag and no body', async () => {
    const url = '/avatar/1bc83cb571cd1c50ba6f3e8a78ef1346?d=identicon&s=32';
    const full = await app.inject({ url });
    await app.inject({ url }); // now a memory hit
    const etag = full.headers.etag as string;
    const nm = await app.inject({ url, headers: { 'if-none-match': `"other", ${etag}` } });
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.headers.etag, etag);
    assert.equal(nm.rawPayload.length, 0);
    assert.equal(nm.headers['content-type'], undefined);
    assert.equal(nm.headers['x-avatar-source'], 'generated');
  });

  it('forgets the prepared answer of an upload that is replaced or deleted', async () => {
    const hash = 'd'.repeat(32);
    const url = `/avatar/${hash}?d=404&s=24`;
    const put = async (background: { r: number; g: number; b: number }) => {
      const payload = await sharp({ create: { width: 30, height: 30, channels: 3, background } })
        .png()
        .toBuffer();
      const r = await app.inject({
        method: 'PUT',
        url: `/avatar/${hash}`,
        payload,
        headers: { 'content-type': 'image/png', ...auth },
      });
      assert.equal(r.statusCode, 201);
    };
    await put({ r: 250, g: 0, b: 0 });
    await app.inject({ url });
    const red = await app.inject({ url }); // a prepared memory hit
    await put({ r: 0, g: 0, b: 250 });
    await app.inject({ url });
    const blue = await app.inject({ url });
    assert.notEqual(blue.headers.etag, red.headers.etag);
    assert.notEqual(blue.headers['last-modified'], undefined);
    const { data } = await sharp(blue.rawPayload).raw().toBuffer({ resolveWithObject: true });
    assert.ok(data[2]! > 200 && data[0]! < 60, 'the replacement is served, not the prepared red one');
    assert.equal(blue.headers['content-length'], String(blue.rawPayload.length));
    assert.equal(
      (await app.inject({ method: 'DELETE', url: `/avatar/${hash}`, headers: auth })).statusCode,
      204,
    );
    const gone = await app.inject({ url });
    assert.equal(gone.statusCode, 404);
  });
});

describe('avatar 304s on the fast lane and through the router', { timeout: 60_000 }, () => {
  let s: Running;
  before(async () => {
    s = await startTestServer({ overrides: { avatar: { upstream: 'none' } } });
  });
  after(() => s?.close());

  const total = async (name: string) =>
    ((await s.app.ctx.metrics.registry.getSingleMetric(name)?.get())?.values ?? []).reduce(
      (n, v) => n + v.value,
      0,
    );
  /** Rendered-avatar lookups, answers by source, and the cache's own hits. */
  const counts = async () => [
    await total('devutil_avatar_cache_total'),
    await total('devutil_avatar_responses_total'),
    s.app.ctx.metrics.caches.map((c) => c.stats()).find((c) => c.name === 'avatar')?.hits ?? 0,
  ];
  const answered = () => s.app.ctx.lane.answered;
  /** A conditional GET of `url` that must be a 304, and what it added to `counts()`. */
  const notModified = async (url: string, etag: string) => {
    const before = await counts();
    const r = await fetch(url, { headers: { 'if-none-match': etag } });
    await r.arrayBuffer();
    assert.equal(r.status, 304);
    return (await counts()).map((n, i) => n - before[i]!);
  };
  const get = async (url: string) => {
    const r = await fetch(url);
    await r.arrayBuffer();
    assert.equal(r.status, 200);
    return String(r.headers.get('etag'));
  };

  it('counts a 304 the same on the fast lane as through the router: an answer, no cache hit', async () => {
    // Through the router: the URL's only answer so far was a render, which the lane does not repeat.
    const routed = `${s.url}/avatar/${'2'.repeat(32)}?d=identicon&s=40`;
    const etag = await get(routed);
    const before = answered();
    const viaRouter = await notModified(routed, etag);
    assert.equal(answered(), before, 'the router answered the 304');
    assert.deepEqual(viaRouter, [0, 1, 0], 'the router’s 304 reads no cache');

    // On the lane: repeated until the lane answers, then asked conditionally at once (the lane
    // repeats an avatar for two seconds: a busy machine may need another round).
    const laned = `${s.url}/avatar/${'3'.repeat(32)}?d=identicon&s=40`;
    let viaLane: number[] = [];
    await waitFor(
      async () => {
        const n = answered();
        const tag = await get(laned);
        if (answered() === n) return false;
        const m = answered();
        const added = await notModified(laned, tag);
        if (answered() !== m + 1) return false;
        viaLane = added;
        return true;
      },
      'a 304 from the fast lane',
      30_000,
    );
    assert.deepEqual(viaLane, viaRouter);
  });
});

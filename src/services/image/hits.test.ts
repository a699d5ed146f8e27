import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';

/** Per request (id, date, rate-limit budget) or naming the tier that answered (X-Cache: MISS, then HIT). */
const DIFFER = ['x-request-id', 'date', 'x-cache', 'ratelimit-remaining', 'ratelimit-reset'];
const without = (h: Record<string, unknown>, drop: string[]) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !drop.includes(k)));

describe('image cache hits (prepared answers)', () => {
  let app: FastifyInstance;
  const memoryHits = () =>
    app.ctx.metrics.caches.map((c) => c.stats()).find((s) => s.name === 'image')?.memoryHits ?? 0;
  before(async () => {
    app = await buildTestServer();
  });
  after(() => app?.close());

  it('answers a memory hit with the headers and bytes of the miss, X-Cache aside', async () => {
    const url = '/rest/api/v1/image?id=hit-check&width=40&height=30&format=png';
    const miss = await app.inject({ url });
    assert.equal(miss.headers['x-cache'], 'MISS');
    const hits = memoryHits();
    const hit = await app.inject({ url });
    assert.equal(memoryHits(), hits + 1);
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.deepEqual(without(hit.headers, DIFFER), without(miss.headers, DIFFER));
    assert.ok(hit.rawPayload.equals(miss.rawPayload));
    assert.equal(hit.headers['content-length'], String(hit.rawPayload.length));
  });

  it('answers a conditional request on a hit with 304, the same ETag and no body', async () => {
    const url = '/rest/api/v1/image?id=nm-check&width=20&height=20';
    const full = await app.inject({ url });
    const etag = full.headers.etag as string;
    const nm = await app.inject({ url, headers: { 'if-none-match': `W/${etag}` } });
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.headers.etag, etag);
    assert.equal(nm.headers['x-cache'], 'HIT');
    assert.equal(nm.headers['content-type'], undefined);
    assert.equal(nm.rawPayload.length, 0);
    const other = await app.inject({ url, headers: { 'if-none-match': '"nope"' } });
    assert.equal(other.statusCode, 200);
  });

  it('never answers a random pick with 304 or an ETag, even when it is a cache hit', async () => {
    const url = '/rest/api/v1/image?width=16&height=16';
    const first = await app.inject({ url });
    assert.equal(first.headers['cache-control'], 'no-store');
    assert.equal(first.headers.etag, undefined);
    const again = await app.inject({ url, headers: { 'if-none-match': '*' } });
    assert.equal(again.statusCode, 200);
    assert.equal(again.headers['cache-control'], 'no-store');
  });
});

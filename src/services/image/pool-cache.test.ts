import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { outputSize, parseQuery } from './params.ts';

describe('image cache', () => {
  it('serves a processed image from the disk cache after a restart, with the same bytes and ETag', async () => {
    const dataDir = tempDir();
    const url = '/rest/api/v1/image?id=restart-check&width=64&height=48';
    const server = () => buildTestServer({ overrides: { server: { dataDir } } });
    const first = await server();
    const a = await first.inject({ url });
    await first.close();
    const second = await server();
    try {
      const b = await second.inject({ url });
      assert.equal(b.headers['x-cache'], 'HIT');
      assert.equal(b.headers.etag, a.headers.etag);
      assert.ok(b.rawPayload.equals(a.rawPayload));
      const metrics = await second.inject({ url: '/metrics' });
      assert.match(metrics.body, /devutil_image_served_total\{source="generator",cache="disk"\} 1/);
    } finally {
      await second.close();
    }
  });
});

describe('params', () => {
  const L = {
    defaultWidth: 1920,
    defaultHeight: 1080,
    maxWidth: 4096,
    maxHeight: 4096,
    maxPixels: 4096 * 3072,
  };
  it('defaults to webp, no effects, sizes from the source', () => {
    assert.deepEqual(parseQuery({}, L), {
      id: null,
      category: null,
      width: null,
      height: null,
      grayscale: false,
      blur: 0,
      format: 'webp',
    });
    assert.equal(parseQuery({ grayscale: '' }, L).grayscale, true);
    assert.equal(parseQuery({ grayscale: 'false' }, L).grayscale, false);
    assert.equal(parseQuery({ blur: '' }, L).blur, 5);
  });
  it('derives the missing side from the source proportions and clamps it to the caps', () => {
    const o = (width: number | null, height: number | null) => ({ ...parseQuery({}, L), width, height });
    assert.deepEqual(outputSize(o(null, null), 4000, 3000, L), [1920, 1080]);
    assert.deepEqual(outputSize(o(640, null), 4000, 3000, L), [640, 480]);
    assert.deepEqual(outputSize(o(null, 300), 600, 900, L), [200, 300]);
    assert.deepEqual(outputSize(o(4096, null), 1000, 4000, L), [4096, 3072]);
    assert.deepEqual(outputSize(o(1, null), 4000, 10, L), [1, 1]);
  });
});

// The proxy's on-disk cache (docs/protocols/reverse-proxy.md §7): Range from a complete object, coalesced
// misses, LRU eviction under the size bound, no caching with Authorization, metrics, and reuse after
// restart.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { text } from '../fixtures/proxy/internet.ts';
import { startProxy, startWorld, type World } from '../fixtures/proxy/world.ts';
import { type Running, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

describe('proxy: cache', { skip: toolSkip('curl') }, () => {
  let w: World;
  let small: Running;
  const cacheDir = tempDir('devutil-cache-');
  const blobs = new Map<string, Buffer>();
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { cacheDir } } });
    small = await startProxy(w.net, { proxy: { cacheMaxBytes: 1024 * 1024 } });
    w.net.on('files.pythonhosted.org', async (req, res, url) => {
      let b = blobs.get(url.pathname);
      if (!b) {
        b = randomBytes(200_000);
        blobs.set(url.pathname, b);
      }
      // Held back so that concurrent requests overlap on the proxy (coalescing case).
      if (url.pathname.includes('/slow/')) await new Promise((r) => setTimeout(r, 400));
      if (req.method === 'HEAD') return text(res, 200, '');
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': b.length,
        etag: '"e1"',
      });
      res.end(b);
    });
  });
  after(async () => {
    await small?.close();
    await w?.close();
  });
  const gets = (path: string) => w.net.seen.filter((s) => s.url === path && s.method === 'GET').length;

  it('serves Range requests from a complete cached object', async () => {
    const path = '/packages/aa/range.bin';
    const full = await curl([`${w.base}/files.pythonhosted.org${path}`]);
    assert.equal(full.status, 200);
    const part = await curl(['-r', '1000-1099', `${w.base}/files.pythonhosted.org${path}`]);
    assert.equal(part.status, 206);
    assert.equal(part.headers['x-cache'], 'HIT');
    assert.ok(part.body.equals(full.body.subarray(1000, 1100)));
    const ifRangeMismatch = await curl([
      '-r',
      '0-9',
      '-H',
      'If-Range: "other"',
      `${w.base}/files.pythonhosted.org${path}`,
    ]);
    assert.equal(ifRangeMismatch.status, 200, 'a stale If-Range gets the whole object');
    const notModified = await curl(['-H', 'If-None-Match: "e1"', `${w.base}/files.pythonhosted.org${path}`]);
    assert.equal(notModified.status, 304);
    assert.equal(gets(path), 1);
  });

  it('coalesces concurrent misses into one upstream fetch', async () => {
    const path = '/packages/slow/one.bin';
    const results = await Promise.all(
      Array.from({ length: 5 }, () => curl([`${w.base}/files.pythonhosted.org${path}`])),
    );
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.ok(r.body.equals(blobs.get(path) as Buffer));
    }
    assert.equal(gets(path), 1);
  });

  it('does not cache requests that carry Authorization', async () => {
    const path = '/packages/aa/private.bin';
    for (let i = 0; i < 2; i++)
      await curl(['-H', 'Authorization: Bearer x', `${w.base}/files.pythonhosted.org${path}`]);
    assert.equal(gets(path), 2);
  });

  it('evicts the least recently used objects past the size bound', async () => {
    const url = (n: number) => `${small.url}/proxy/files.pythonhosted.org/packages/lru/${n}.bin`;
    for (let n = 0; n < 6; n++) assert.equal((await curl([url(n)])).status, 200);
    await curl([url(5)]);
    assert.equal(gets('/packages/lru/5.bin'), 1, 'the newest object is still cached');
    await curl([url(0)]);
    assert.equal(gets('/packages/lru/0.bin'), 2, 'the oldest object was evicted');
  });

  it('counts hits, misses and bytes in /metrics', async () => {
    const m = await curl([`${w.proxy.url}/metrics`]);
    const body = m.body.toString();
    assert.match(body, /devutil_proxy_cache_requests_total\{result="hit"\} [1-9]/);
    assert.match(body, /devutil_proxy_cache_requests_total\{result="miss"\} [1-9]/);
    assert.match(body, /devutil_proxy_bytes_total\{source="cache"\} [1-9]/);
    assert.match(body, /devutil_proxy_bytes_total\{source="upstream"\} [1-9]/);
  });

  it('reuses the cache directory after a restart', async () => {
    const again = await startProxy(w.net, { proxy: { cacheDir } });
    try {
      const r = await curl([`${again.url}/proxy/files.pythonhosted.org/packages/aa/range.bin`]);
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-cache'], 'HIT');
      assert.equal(gets('/packages/aa/range.bin'), 1);
    } finally {
      await again.close();
    }
  });
});

// Small cached objects answered from memory with headers prepared once per stored body
// (infra/http/prepared-response.ts): the same answer as the disk tier gives, 304s from the stored
// validators, and never a stale body once the stored object is replaced.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { startProxy, startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { waitFor } from '../helpers/wait.ts';

/** The disk tier's published records (unfinished entries are in its `tmp` directory, unnamed). */
function records(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .filter((f) => String(f).endsWith('.meta'))
    .map(String);
}

const PER_REQUEST = ['x-request-id', 'date', 'ratelimit-remaining', 'ratelimit-reset'];
const without = (h: Record<string, string>) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !PER_REQUEST.includes(k)));

describe('proxy: memory-tier hits', { skip: toolSkip('curl') }, () => {
  let w: World;
  const cacheDir = tempDir('devutil-hits-');
  let release = 'Suite: stable\nVersion: 1\n';
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { cacheDir } } });
    w.net.on('files.pythonhosted.org', async (_req, res, url) => {
      const body = Buffer.alloc(4096, url.pathname.length);
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': body.length,
        etag: '"p1"',
        'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT',
      });
      res.end(body);
    });
    w.net.on('deb.debian.org', async (req, res) => {
      const etag = `"r${release.length}"`;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { etag });
        res.end();
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': Buffer.byteLength(release),
        etag,
      });
      res.end(release);
    });
  });
  after(() => w?.close());

  it('answers a memory hit with the headers and bytes of a disk-tier hit', async () => {
    const path = '/proxy/files.pythonhosted.org/packages/hh/one.whl';
    assert.equal((await curl([`${w.proxy.url}${path}`])).status, 200);
    // The first instance writes the object to disk after the answer's last byte went out (a CI run
    // of the Node 20 leg started the second instance before that and got a miss): the second starts
    // once the record is published, which the disk tier renames into place after the body.
    await waitFor(() => records(cacheDir).length === 1, 'the object published on disk', 10_000, 20);
    // A second instance on the same directory: its first answer comes from disk, the next from memory.
    const again = await startProxy(w.net, { proxy: { cacheDir } });
    try {
      const disk = await curl([`${again.url}${path}`]);
      const memory = await curl([`${again.url}${path}`]);
      assert.equal(disk.headers['x-cache'], 'HIT');
      assert.equal(memory.status, 200);
      assert.deepEqual(without(memory.headers), without(disk.headers));
      assert.ok(memory.body.equals(disk.body));
      assert.equal(memory.headers['content-length'], '4096');
    } finally {
      await again.close();
    }
  });

  it('answers a conditional request on a memory hit with 304, the same ETag and no body', async () => {
    const url = `${w.proxy.url}/proxy/files.pythonhosted.org/packages/hh/two.whl`;
    await curl([url]);
    await curl([url]);
    const nm = await curl(['-H', 'If-None-Match: "p1"', url]);
    assert.equal(nm.status, 304);
    assert.equal(nm.headers.etag, '"p1"');
    assert.equal(nm.headers['x-cache'], 'HIT');
    assert.equal(nm.body.length, 0);
    const ims = await curl(['-H', 'If-Modified-Since: Wed, 02 Jul 2025 00:00:00 GMT', url]);
    assert.equal(ims.status, 304);
    const older = await curl(['-H', 'If-Modified-Since: Mon, 30 Jun 2025 00:00:00 GMT', url]);
    assert.equal(older.status, 200);
    assert.equal(older.body.length, 4096);
    const other = await curl(['-H', 'If-None-Match: "p0"', url]);
    assert.equal(other.status, 200);
  });

  it('answers conditionals and ranges on hits by RFC 9110, from memory and from disk alike', async () => {
    const path = '/proxy/files.pythonhosted.org/packages/hh/three.whl';
    await curl([`${w.proxy.url}${path}`]);
    const disk = await startProxy(w.net, { proxy: { cacheDir, cacheMemoryBytes: 0 } });
    try {
      for (const base of [w.proxy.url, disk.url]) {
        const url = `${base}${path}`;
        const status = async (...h: string[]) => (await curl([...h.flatMap((x) => ['-H', x]), url])).status;
        // If-None-Match: weak comparison, lists and * (13.1.2); If-Match is the origin's (13.1.1).
        assert.equal(await status('If-None-Match: W/"p1"'), 304, base);
        assert.equal(await status('If-None-Match: "a", "p1"'), 304, base);
        assert.equal(await status('If-None-Match: *'), 304, base);
        assert.equal(await status('If-Match: "zz"'), 200, base);
        // Range: an invalid one is ignored (14.1.1), If-Range compares strongly (13.1.5).
        assert.equal(await status('Range: bytes=5-3'), 200, base);
        assert.equal(await status('Range: bytes=0-1', 'If-Range: W/"p1"'), 200, base);
        const r = await curl(['-H', 'Range: bytes=0-1,2-3', '-H', 'If-Range: "p1"', url]);
        assert.equal(r.status, 206, base);
        assert.equal(r.headers['content-range'], 'bytes 0-3/4096', base);
        assert.equal(await status('Range: bytes=5000-'), 416, base);
        const head = await curl(['-I', '-H', 'Range: bytes=0-1', url]);
        assert.equal(head.status, 200, `${base}: HEAD has no range handling (14.2)`);
      }
    } finally {
      await disk.close();
    }
  });

  it('serves the new version of a revalidated object, never the stored one', async () => {
    const url = `${w.proxy.url}/proxy/deb.debian.org/debian/dists/stable/Release`;
    const first = await curl([url]);
    assert.equal(first.body.toString(), release);
    assert.equal((await curl([url])).headers['x-cache'], 'HIT');
    release = 'Suite: stable\nVersion: 2 (changed upstream)\n';
    // A client's no-cache makes the proxy ask upstream, which has a new version.
    const forced = await curl(['-H', 'Cache-Control: no-cache', url]);
    assert.equal(forced.body.toString(), release);
    const next = await curl([url]);
    assert.equal(next.body.toString(), release);
    assert.equal(next.headers.etag, `"r${release.length}"`);
    assert.equal(next.headers['content-length'], String(release.length));
  });
});

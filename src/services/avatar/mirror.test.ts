import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { FakeGravatar } from '../../../test/fixtures/avatar/gravatar.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const RED = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1';
const GREEN = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2';
const RATED = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa3';
const CHANGING = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa4';
const UNKNOWN = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb1';
const TOKEN = testSecret('avatar-admin-');

async function firstPixel(buf: Buffer): Promise<number[]> {
  const { data } = await sharp(buf).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return [data[0]!, data[1]!, data[2]!];
}

describe('avatar mirror of a Gravatar-compatible upstream', () => {
  const upstream = new FakeGravatar();
  const dataDir = tempDir();
  const swrDir = tempDir();
  let app: FastifyInstance;
  let swr: FastifyInstance;
  const extra: FastifyInstance[] = [];

  before(async () => {
    await upstream.start();
    upstream.avatars.set(RED, { colour: [230, 20, 20] });
    upstream.avatars.set(GREEN, { colour: [20, 200, 20] });
    upstream.avatars.set(RATED, { colour: [20, 20, 230], rating: 'pg' });
    upstream.avatars.set(CHANGING, { colour: [200, 200, 0], version: 1 });
    app = await buildTestServer({
      overrides: {
        server: { dataDir },
        egress: { resolve: [upstream.resolve] },
        avatar: { upstream: upstream.base, adminToken: TOKEN },
      },
    });
    // Everything expires at once here: stale copies are served while a refresh runs behind them.
    swr = await buildTestServer({
      overrides: {
        server: { dataDir: swrDir },
        egress: { resolve: [upstream.resolve] },
        avatar: { upstream: upstream.base, mirrorMinTtlSec: 0, mirrorMaxTtlSec: 1 },
      },
    });
  });
  after(async () => {
    // The fixture goes first: a failed before() must not leave a listener keeping the run alive.
    await upstream.stop();
    await app?.close();
    await swr?.close();
    for (const a of extra) await a.close();
  });

  it('mirrors the upstream image at the requested size, asking with d=404', async () => {
    const r = await app.inject({ url: `/avatar/${RED}?s=100&d=identicon` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-avatar-source'], 'mirror');
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.width, m.height, m.format], [100, 100, 'png']);
    const [red, green] = await firstPixel(r.rawPayload);
    assert.ok(red! > 200 && green! < 50);
    const asked = upstream.requestsFor(RED);
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.query.get('d'), '404');
    assert.equal(asked[0]!.query.get('s'), '512');
    assert.equal(asked[0]!.query.get('r'), 'g');
    assert.ok(r.headers['last-modified']);
  });

  it('serves other sizes and formats from the cached original without asking again', async () => {
    const jpg = await app.inject({ url: `/avatar/${RED}.jpg?s=40` });
    assert.equal(jpg.headers['content-type'], 'image/jpeg');
    assert.equal((await sharp(jpg.rawPayload).metadata()).width, 40);
    assert.equal(upstream.requestsFor(RED).length, 1);
  });

  it('remembers "no such avatar" briefly and draws the default', async () => {
    const a = await app.inject({ url: `/avatar/${UNKNOWN}?d=retro` });
    assert.equal(a.headers['x-avatar-source'], 'generated');
    const b = await app.inject({ url: `/avatar/${UNKNOWN}?d=404` });
    assert.equal(b.statusCode, 404);
    assert.equal(upstream.requestsFor(UNKNOWN).length, 1);
  });

  it('passes the rating through: a pg image is hidden from r=g', async () => {
    const g = await app.inject({ url: `/avatar/${RATED}?d=404` });
    assert.equal(g.statusCode, 404);
    const pg = await app.inject({ url: `/avatar/${RATED}?d=404&r=pg` });
    assert.equal(pg.statusCode, 200);
    assert.equal(pg.headers['x-avatar-source'], 'mirror');
  });

  it('skips the upstream for gravatarproxy=n and f=y', async () => {
    const before = upstream.requestsFor(GREEN).length;
    const n = await app.inject({ url: `/avatar/${GREEN}?d=404&gravatarproxy=n` });
    assert.equal(n.statusCode, 404);
    const f = await app.inject({ url: `/avatar/${GREEN}?d=monsterid&f=y` });
    assert.equal(f.headers['x-avatar-source'], 'generated');
    assert.equal(upstream.requestsFor(GREEN).length, before);
  });

  it('prefers an avatar uploaded here over the mirrored one', async () => {
    const img = await sharp({ create: { width: 30, height: 30, channels: 3, background: '#0000ff' } })
      .png()
      .toBuffer();
    const put = await app.inject({
      method: 'PUT',
      url: `/avatar/${GREEN}`,
      payload: img,
      headers: { 'content-type': 'image/png', authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(put.statusCode, 201, put.body);
    const r = await app.inject({ url: `/avatar/${GREEN}?s=20` });
    assert.equal(r.headers['x-avatar-source'], 'upload');
    const [red, , blue] = await firstPixel(r.rawPayload);
    assert.ok(blue! > 200 && red! < 50);
  });

  it('serves stale copies at once and revalidates them with If-None-Match in the background', async () => {
    upstream.maxAge = 0;
    const first = await swr.inject({ url: `/avatar/${CHANGING}?s=16` });
    assert.equal(first.headers['x-avatar-source'], 'mirror');
    const count = upstream.requestsFor(CHANGING).length;
    const second = await swr.inject({ url: `/avatar/${CHANGING}?s=16` });
    assert.equal(second.headers['x-avatar-source'], 'mirror');
    assert.equal(second.headers.etag, first.headers.etag);
    await waitFor(() => upstream.requestsFor(CHANGING).length > count, 'a background revalidation');
    const conditional = upstream.requestsFor(CHANGING).at(-1)!;
    assert.ok(conditional.headers['if-none-match'], 'revalidation is conditional');
    // The user changes their picture upstream: the next refresh brings the new one in.
    upstream.avatars.set(CHANGING, { colour: [0, 0, 0], version: 2 });
    await swr.inject({ url: `/avatar/${CHANGING}?s=16` });
    let latest = first;
    await waitFor(() => {
      void swr.inject({ url: `/avatar/${CHANGING}?s=16` }).then((r) => {
        latest = r;
      });
      return latest.headers.etag !== first.headers.etag;
    }, 'the changed picture');
    const [r, g, b] = await firstPixel(latest.rawPayload);
    assert.ok(r! < 30 && g! < 30 && b! < 30, 'the new (black) picture is served');
    upstream.maxAge = 300;
  });

  it('keeps serving mirrored images from cache after the upstream goes away, even after a restart', async () => {
    await upstream.stop();
    const r = await app.inject({ url: `/avatar/${RED}?s=64` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-avatar-source'], 'mirror');
    // A new process on a data directory whose copies have all expired, and no stale window: it
    // must try the upstream first, fail, and still serve the old copy.
    const restarted = await buildTestServer({
      overrides: {
        server: { dataDir: swrDir },
        egress: { resolve: [upstream.resolve] },
        avatar: { upstream: upstream.base, mirrorMinTtlSec: 0, mirrorMaxTtlSec: 1, staleSec: 0 },
      },
    });
    extra.push(restarted);
    const again = await restarted.inject({ url: `/avatar/${CHANGING}?s=48&d=404` });
    assert.equal(again.statusCode, 200);
    assert.equal(again.headers['x-avatar-source'], 'mirror');
    const [red, green] = await firstPixel(again.rawPayload);
    assert.ok(red! < 30 && green! < 30, 'the last mirrored (black) picture');
    // A hash never seen before falls through to the generated default when offline.
    const fresh = await restarted.inject({ url: `/avatar/${'c'.repeat(32)}?d=wavatar` });
    assert.equal(fresh.statusCode, 200);
    assert.equal(fresh.headers['x-avatar-source'], 'generated');
    await upstream.start(upstream.port);
  });

  it('remembers upstream failures briefly instead of asking on every request', async () => {
    upstream.failWith = 500;
    const hash = 'd'.repeat(32);
    const a = await app.inject({ url: `/avatar/${hash}?d=identicon` });
    const b = await app.inject({ url: `/avatar/${hash}?d=identicon` });
    assert.equal(a.headers['x-avatar-source'], 'generated');
    assert.equal(b.headers['x-avatar-source'], 'generated');
    assert.equal(upstream.requestsFor(hash).length, 1);
    upstream.failWith = null;
  });

  it('does not mirror without a disk budget (originals live there): the upstream is not asked', async () => {
    const noDisk = await buildTestServer({
      overrides: { avatar: { upstream: upstream.url, diskCacheBytes: 0 } },
    });
    extra.push(noDisk);
    const hash = 'e'.repeat(32);
    upstream.avatars.set(hash, { colour: [20, 200, 20] });
    const r = await noDisk.inject({ url: `/avatar/${hash}?d=identicon&s=20` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-avatar-source'], 'generated');
    assert.equal(upstream.requestsFor(hash).length, 0);
  });
});

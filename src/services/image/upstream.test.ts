import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { type PicsumFixture, startPicsumFixture } from '../../../test/fixtures/image/picsum.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';
import { loadUndici } from '../../infra/egress/client.ts';

const URL_ = '/rest/api/v1/image';

async function centre(body: Buffer): Promise<number[]> {
  const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
  const i = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * info.channels;
  return [data[i]!, data[i + 1]!, data[i + 2]!];
}

const near = (a: number[], b: number[], tol: number) => a.every((v, i) => Math.abs(v - b[i]!) <= tol);

describe('upstream source against a local Picsum-style origin', () => {
  let fx: PicsumFixture;
  let app: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    // undici is loaded by the first outbound request, inside its deadline: on a loaded machine
    // under tsx that load alone can take seconds.
    await loadUndici();
    fx = await startPicsumFixture({ hugeBytes: 150_000 });
    app = await buildTestServer({
      logs,
      overrides: {
        egress: { resolve: [fx.resolve] },
        image: {
          // The query stands for an access key some origins want; it must never reach a log or a client.
          upstreamUrl: `${fx.base}/seed/{id}/{width}/{height}?client_id=sekrit-abc`,
          upstreamWidth: 600,
          upstreamHeight: 400,
          // Room for a good fetch on a busy machine (800 ms was missed there); the stall case waits it out.
          upstreamTimeoutMs: 5000,
          maxSourceBytes: 100_000,
          randomPool: 3,
          rateLimit: 'off',
        },
      },
    });
  });
  after(async () => {
    await app.close();
    await fx.close();
  });

  it('serves the upstream image, following its redirect, with the source proportions', async () => {
    const r = await app.inject({ url: `${URL_}?id=hello&width=300` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['image-source'], 'upstream');
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.format, m.width, m.height], ['webp', 300, 200]);
    // Centre of a left-to-right gradient from the colour to half of it: about 0.75 of the colour.
    const want = fx.colour(fx.imageOf('hello')).map((c) => c * 0.75);
    const got = await centre(r.rawPayload);
    assert.ok(near(got, want, 25), `centre ${got} vs ${want}`);
    assert.ok(
      fx.seen.some((s) => s.startsWith('picsum.test /id/')),
      'followed the 302',
    );
  });

  it('fetches an id once and serves other sizes of it from the cached original, byte-stable', async () => {
    const before = fx.seen.filter((s) => s.includes('/seed/once/')).length;
    const [a, b] = await Promise.all([
      app.inject({ url: `${URL_}?id=once&width=200&height=200` }),
      app.inject({ url: `${URL_}?id=once&width=120` }),
    ]);
    const a2 = await app.inject({ url: `${URL_}?id=once&width=200&height=200` });
    assert.equal(a.headers['image-source'], 'upstream');
    assert.equal(b.headers['image-source'], 'upstream');
    assert.ok(a.rawPayload.equals(a2.rawPayload));
    assert.equal(fx.seen.filter((s) => s.includes('/seed/once/')).length - before, 1);
  });

  it('keeps path-like ids inside one path segment of the template', async () => {
    for (const id of ['..', '.', '../../admin', 'a/b?c#d', '%2e%2e']) {
      const r = await app.inject({ url: `${URL_}?id=${encodeURIComponent(id)}&width=30&height=30` });
      assert.equal(r.statusCode, 200);
      // A bare dot segment cannot be sent at all: the generator answers for it.
      assert.equal(r.headers['image-source'], id === '.' || id === '..' ? 'generator' : 'upstream', id);
    }
    const seeds = fx.seen.filter((s) => / \/seed\//.test(s)).map((s) => s.split(' ')[1]!);
    assert.ok(seeds.includes('/seed/..%2F..%2Fadmin/600/400?client_id=sekrit-abc'), seeds.join('\n'));
    assert.ok(seeds.includes('/seed/%252e%252e/600/400?client_id=sekrit-abc'));
    assert.ok(seeds.includes('/seed/a%2Fb%3Fc%23d/600/400?client_id=sekrit-abc'));
    assert.ok(!fx.seen.some((s) => / \/(admin|600\/400)/.test(s)), 'no request escaped the seed segment');
  });

  it('draws random requests from the configured pool of ids', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = await app.inject({ url: `${URL_}?width=40&height=40` });
      assert.equal(r.headers['cache-control'], 'no-store');
      assert.equal(r.headers['image-source'], 'upstream');
      ids.add(r.headers['image-id'] as string);
    }
    for (const id of ids) assert.ok(['0', '1', '2'].includes(id), id);
  });

  const hostile: [string, string][] = [
    ['evil-redirect', 'a redirect to a host outside the allow-list'],
    ['scheme-redirect', 'a redirect to file://'],
    ['loop', 'a redirect loop'],
    ['html', 'an HTML page'],
    ['error', 'a 500'],
    ['huge', 'a declared body over the cap'],
    ['chunked-huge', 'a chunked body over the cap'],
    ['slow', 'a body that stalls past the deadline'],
    ['bomb', 'a PNG claiming 60000x60000 pixels'],
    ['svg', 'an SVG'],
    ['garbage', 'bytes that are not an image'],
  ];
  for (const [seed, what] of hostile) {
    it(`falls back to the generator on ${what}`, async () => {
      const r = await app.inject({ url: `${URL_}?id=${seed}&width=64&height=48` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['image-source'], 'generator');
      assert.equal(r.headers['cache-control'], 'public, max-age=60');
      const m = await sharp(r.rawPayload).metadata();
      assert.deepEqual([m.width, m.height], [64, 48]);
    });
  }

  it('never left the allowed host, counted the failures and kept the access key out of logs', async () => {
    assert.ok(!fx.seen.some((s) => s.startsWith('localhost')), fx.seen.join('\n'));
    const metrics = await app.inject({ url: '/metrics' });
    const m = /devutil_image_source_failures_total\{source="upstream"\} (\d+)/.exec(metrics.body);
    assert.ok(m && Number(m[1]) >= hostile.length, metrics.body.slice(0, 200));
    assert.match(logs.text(), /image source failed; trying the next/);
    assert.doesNotMatch(logs.text(), /sekrit/);
    const list = await app.inject({ url: `${URL_}/list` });
    assert.doesNotMatch(list.body, /sekrit/);
    assert.equal(list.json().data.source, 'upstream');
  });
});

describe('upstream configuration', () => {
  it('falls back to the generator when the upstream is down', async () => {
    const port = CLOSED_PORT;
    const app = await buildTestServer({
      overrides: {
        egress: { resolve: [`down.test=127.0.0.1:${port}`] },
        image: { upstreamUrl: 'http://down.test/seed/{id}/{width}/{height}' },
      },
    });
    try {
      const r = await app.inject({ url: `${URL_}?id=down&width=32&height=32` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['image-source'], 'generator');
    } finally {
      await app.close();
    }
  });

  it('refuses to start when the template host is not in the allow-list', async () => {
    await assert.rejects(
      buildTestServer({
        overrides: {
          image: { upstreamUrl: 'http://127.0.0.1:9/seed/{id}/1/1', upstreamHosts: ['picsum.photos'] },
        },
      }),
      /not in the allowed hosts/,
    );
  });

  it('refuses a template without {id} at config time', async () => {
    await assert.rejects(
      buildTestServer({ overrides: { image: { upstreamUrl: 'http://127.0.0.1:9/static.jpg' } } }),
      /upstreamUrl/,
    );
  });
});

describe('upstream fetches and the sharp pool', () => {
  it('does not hold a sharp slot while waiting on a slow origin', async () => {
    const fx = await startPicsumFixture();
    const app = await buildTestServer({
      overrides: {
        egress: { resolve: [fx.resolve] },
        image: {
          upstreamUrl: `${fx.base}/seed/{id}/{width}/{height}`,
          upstreamWidth: 300,
          upstreamHeight: 200,
          // The quick fetch must finish within it while the slow one stalls, on a busy machine too.
          upstreamTimeoutMs: 5000,
          concurrency: 1,
          queueLength: 0,
          rateLimit: 'off',
        },
      },
    });
    try {
      const stalled = app.inject({ url: `${URL_}?id=slow&width=40&height=40` });
      for (let i = 0; i < 400 && !fx.seen.some((s) => s.includes('/seed/slow/')); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.ok(
        fx.seen.some((s) => s.includes('/seed/slow/')),
        'the slow fetch started',
      );
      // With one slot and no queue, this would be a 503 if the stalled fetch held the slot.
      const quick = await app.inject({ url: `${URL_}?id=quick&width=40&height=40` });
      assert.equal(quick.statusCode, 200);
      assert.equal(quick.headers['image-source'], 'upstream');
      const late = await stalled;
      assert.equal(late.statusCode, 200);
      assert.equal(late.headers['image-source'], 'generator');
    } finally {
      await app.close();
      await fx.close();
    }
  });
});

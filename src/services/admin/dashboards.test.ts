// The dashboard reads each utility only through its definition (`dashboard`, ../define.ts). These
// tests are what keeps that honest: a utility that renames or drops a series its dashboard reads
// gets null from the reader on a real server and fails here, instead of blanking the operator's
// dashboard silently; and real traffic shows up as hits and misses under the right names.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { lookups, total } from '../../infra/observe/series.ts';
import type { ServiceDef } from '../define.ts';
import { SERVICES } from '../index.ts';
import { dashboardsOf } from './probes.ts';

const TOKEN = testSecret('admin-token-');

describe('utility dashboards', { timeout: 120_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({
      env: { DEVUTIL_ADMIN_TOKEN: TOKEN },
      overrides: { files: { quotaBytes: 1024 * 1024 } },
    });
  });
  after(() => app?.close());

  it('are declared by the utilities that have a cache, a render queue, a quota or sessions', async () => {
    const boards = await Promise.all(
      (SERVICES as readonly ServiceDef[]).map(async (d) => ({
        name: d.name,
        board: await d.dashboard?.(app.ctx),
      })),
    );
    const having = (part: string) => boards.filter((b) => b.board && part in b.board).map((b) => b.name);
    assert.deepEqual(having('cache'), ['image', 'proxy', 'diagrams', 'avatar']);
    assert.deepEqual(having('queue'), ['image', 'diagrams', 'avatar']);
    assert.deepEqual(having('quota'), ['files']);
    assert.deepEqual(having('sessions'), ['relay']);
  });

  it('find every series they read on a real server (a renamed metric fails here)', async () => {
    const missing: string[] = [];
    for (const { name, board } of await dashboardsOf(app.ctx)) {
      if (board.cache && (await board.cache()) === null) missing.push(`${name}: cache`);
      if (board.queue && (await board.queue.waiting()) === null) missing.push(`${name}: queue`);
      if (board.quota && (await board.quota()) === null) missing.push(`${name}: quota`);
    }
    assert.deepEqual(missing, []);
  });

  it('take the queue limits from each utility’s own config', async () => {
    const limits = Object.fromEntries(
      (await dashboardsOf(app.ctx)).flatMap(({ name, board }) =>
        board.queue ? [[name, board.queue.limit]] : [],
      ),
    );
    const c = app.ctx.config;
    assert.deepEqual(limits, {
      image: c.image.queueLength,
      diagrams: c.diagrams.queueSize,
      avatar: c.avatar.renderQueue,
    });
  });

  it('shows the files quota and the bytes stored against it', async () => {
    const files = (await dashboardsOf(app.ctx)).find((d) => d.name === 'files');
    assert.deepEqual(await files?.board.quota?.(), { used: 0, limit: 1024 * 1024 });
  });

  const cacheOf = async (name: string) =>
    (await dashboardsOf(app.ctx)).find((d) => d.name === name)?.board.cache?.();

  const avatarHash = createHash('md5').update('dashboard@example.com').digest('hex');
  for (const [name, url, what] of [
    ['image', '/rest/api/v1/image?id=dash-1&width=32&height=24', 'a generated image'],
    ['avatar', `/avatar/${avatarHash}?d=identicon&s=40`, 'a rendered avatar'],
  ] as const) {
    it(`counts ${what} as a miss, then the same one as a hit`, async () => {
      const before = await cacheOf(name);
      assert.equal((await app.inject({ url })).statusCode, 200);
      assert.equal((await app.inject({ url })).statusCode, 200);
      const after = await cacheOf(name);
      assert.ok(before && after);
      assert.deepEqual(
        { hits: after.hits - before.hits, misses: after.misses - before.misses },
        { hits: 1, misses: 1 },
      );
    });
  }

  it('the same figures reach the stats answer', async () => {
    const r = await app.inject({
      url: '/rest/api/v1/admin/stats',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const data = r.json().data as {
      caches: { name: string; hits: number; misses: number }[];
      quotas: unknown[];
    };
    const image = data.caches.find((c) => c.name === 'image');
    assert.ok(image && image.hits >= 1 && image.misses >= 1, JSON.stringify(data.caches));
    assert.deepEqual(data.quotas, [{ name: 'files', used: 0, limit: 1024 * 1024 }]);
  });
});

describe('series readers', { timeout: 10_000 }, () => {
  it('answer null for a metric the server does not have, never a silent zero', async () => {
    const reg = new Registry();
    assert.equal(await total(reg, 'devutil_no_such_total'), null);
    assert.equal(
      await lookups(reg, 'devutil_no_such_total', 'result', { hits: ['hit'], misses: ['miss'] }),
      null,
    );
  });
});

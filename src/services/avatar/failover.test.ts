import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { FakeGravatar } from '../../../test/fixtures/avatar/gravatar.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';

/** Accepts connections and never answers: an upstream that hangs (counts what it was sent). */
class Silent {
  connections = 0;
  /** Connections that carried a request (bytes), with their first line. */
  requests: string[] = [];
  port = 0;
  private server: Server | null = null;
  private sockets = new Set<Socket>();
  async start(): Promise<void> {
    this.server = createServer((s) => {
      this.connections++;
      s.once('data', (d) => this.requests.push(d.toString('latin1').split('\r\n')[0] ?? ''));
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    this.port = typeof a === 'object' && a ? a.port : 0;
  }
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

const HAS = 'f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f1';

describe('avatar mirrors: an ordered list with failover', { timeout: 60_000 }, () => {
  const first = new FakeGravatar('first.test');
  const second = new FakeGravatar('second.test');
  const silent = new Silent();
  let refusedPort = 0;
  const apps: FastifyInstance[] = [];

  const resolve = () => [
    first.resolve,
    second.resolve,
    `silent.test=127.0.0.1:${silent.port}`,
    `refused.test=127.0.0.1:${refusedPort}`,
  ];
  const server = async (upstreams: string[], more: string[] = []) => {
    const app = await buildTestServer({
      overrides: {
        server: { dataDir: tempDir() },
        egress: { resolve: [...resolve(), ...more] },
        avatar: { upstreams, upstreamTimeoutMs: 1500, errorTtlSec: 60 },
      },
    });
    apps.push(app);
    return app;
  };

  before(async () => {
    await first.start();
    await second.start();
    await silent.start();
    refusedPort = CLOSED_PORT;
  });
  after(async () => {
    await first.stop();
    await second.stop();
    await silent.stop();
    for (const a of apps) await a.close();
  });

  const reset = () => {
    first.seen.length = 0;
    second.seen.length = 0;
    first.failWith = null;
    second.failWith = null;
    first.avatars.clear();
    second.avatars.clear();
    silent.connections = 0;
  };

  const table: {
    name: string;
    upstreams: string[];
    setup: () => void;
    source: string;
    firstAsked: number;
    secondAsked: number;
    /** The hanging mirror was dialled. */
    silentAsked?: boolean;
  }[] = [
    {
      name: 'the first mirror answers: the second is never asked',
      upstreams: ['http://first.test', 'http://second.test'],
      setup: () => {
        first.avatars.set(HAS, { colour: [200, 0, 0] });
        second.avatars.set(HAS, { colour: [0, 200, 0] });
      },
      source: 'mirror',
      firstAsked: 1,
      secondAsked: 0,
    },
    {
      name: 'the first answers 503: the second serves it',
      upstreams: ['http://first.test', 'http://second.test'],
      setup: () => {
        first.failWith = 503;
        second.avatars.set(HAS, { colour: [0, 200, 0] });
      },
      source: 'mirror',
      firstAsked: 1,
      secondAsked: 1,
    },
    {
      name: 'the first refuses connections: the second serves it',
      upstreams: ['http://refused.test', 'http://second.test'],
      setup: () => second.avatars.set(HAS, { colour: [0, 200, 0] }),
      source: 'mirror',
      firstAsked: 0,
      secondAsked: 1,
    },
    {
      name: 'the first never answers (timeout): the second serves it',
      upstreams: ['http://silent.test', 'http://second.test'],
      setup: () => second.avatars.set(HAS, { colour: [0, 200, 0] }),
      source: 'mirror',
      firstAsked: 0,
      secondAsked: 1,
      silentAsked: true,
    },
    {
      name: '"no such avatar" from the first is final: the default is drawn, the second not asked',
      upstreams: ['http://first.test', 'http://second.test'],
      setup: () => second.avatars.set(HAS, { colour: [0, 200, 0] }),
      source: 'generated',
      firstAsked: 1,
      secondAsked: 0,
    },
    {
      name: 'every mirror fails: the default is drawn',
      upstreams: ['http://first.test', 'http://refused.test', 'http://second.test'],
      setup: () => {
        first.failWith = 500;
        second.failWith = 502;
      },
      source: 'generated',
      firstAsked: 1,
      secondAsked: 1,
    },
  ];

  for (const row of table)
    it(row.name, async () => {
      reset();
      row.setup();
      const app = await server(row.upstreams);
      const r = await app.inject({ url: `/avatar/${HAS}?s=32&d=identicon` });
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['x-avatar-source'], row.source);
      assert.equal(first.requestsFor(HAS).length, row.firstAsked, 'first.test requests');
      assert.equal(second.requestsFor(HAS).length, row.secondAsked, 'second.test requests');
      if (row.silentAsked) assert.ok(silent.connections > 0, 'the hanging mirror was tried');
    });

  it('skips a failed mirror for later hashes instead of asking (and waiting on) it again', async () => {
    reset();
    // A hanging mirror of this test alone, counting requests (see the offline case below).
    const hang = new Silent();
    await hang.start();
    try {
      const app = await server(
        ['http://hang.test', 'http://first.test'],
        [`hang.test=127.0.0.1:${hang.port}`],
      );
      first.avatars.set('f'.repeat(32), { colour: [0, 0, 200] });
      first.avatars.set('e'.repeat(32), { colour: [0, 0, 200] });
      const a = await app.inject({ url: `/avatar/${'f'.repeat(32)}?s=16` });
      assert.equal(a.headers['x-avatar-source'], 'mirror');
      assert.ok(hang.requests.length > 0, 'the hanging mirror was asked for the first hash');
      const b = await app.inject({ url: `/avatar/${'e'.repeat(32)}?s=16` });
      assert.equal(b.headers['x-avatar-source'], 'mirror');
      for (const line of hang.requests)
        assert.match(
          line,
          new RegExp(`^GET /avatar/${'f'.repeat(32)}\\?`),
          'the hanging mirror was skipped for the second hash',
        );
    } finally {
      await hang.stop();
    }
  });

  it('offline: once every mirror failed, new hashes get the default without any upstream request', async () => {
    reset();
    // A hanging mirror of this test alone, counting requests (not connections): no other test's
    // server or connection can reach it (CI once saw a second connection on the shared one).
    const hang = new Silent();
    await hang.start();
    try {
      const app = await server(
        ['http://hang.test', 'http://refused.test'],
        [`hang.test=127.0.0.1:${hang.port}`],
      );
      for (const h of ['1', '2', '3', '4']) {
        const r = await app.inject({ url: `/avatar/${h.repeat(32)}?s=16&d=retro` });
        assert.equal(r.headers['x-avatar-source'], 'generated');
      }
      // The first hash was asked; no later one was (a stray connection without a request, or a
      // repeat of the first hash's request, is not what this is about).
      assert.ok(hang.requests.length > 0, 'the hanging mirror was asked for the first hash');
      for (const line of hang.requests)
        assert.match(
          line,
          new RegExp(`^GET /avatar/${'1'.repeat(32)}\\?`),
          'no request for the later hashes',
        );
      const metrics = (await app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /devutil_avatar_upstream_total\{result="error"\} 1\n/);
      assert.match(metrics, /devutil_avatar_upstream_total\{result="skipped"\} 3\n/);
    } finally {
      await hang.stop();
    }
  });

  it('refuses a list item that is not an http(s) URL at start-up, naming the variable', async () => {
    await assert.rejects(
      buildTestServer({ env: { DEVUTIL_AVATAR_UPSTREAMS: 'https://ok.example,ftp://bad.example' } }),
      /DEVUTIL_AVATAR_UPSTREAMS/,
    );
  });
});

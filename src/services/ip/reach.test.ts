// /rest/api/v1/ip/reach against fixture "GitHub", "PyPI", "Docker Hub" and "Hugging Face" over
// real TLS on loopback (their real names, mapped with DEVUTIL_PROXY_RESOLVE): up, refusing,
// silent, failing. No timing is asserted, only that timings are reported and bounded by the deadline.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { makePki } from '../../../test/fixtures/proxy/tls.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { describeFailure } from './reach.ts';

const HOSTS = ['github.com', 'pypi.org', 'registry-1.docker.io', 'huggingface.co'] as const;
type Mode = 'up' | 'silent' | 'fail' | 'refused';

describe('/rest/api/v1/ip/reach', { timeout: 90_000 }, () => {
  const modes = new Map<string, Mode>();
  const seen: string[] = [];
  let server: Server;
  let port = 0;
  let refusedPort = 0;
  let caFile = '';
  const apps: FastifyInstance[] = [];

  before(async () => {
    const pki = makePki(tempDir(), HOSTS);
    caFile = pki.caFile;
    server = createServer({ cert: pki.cert, key: pki.key }, (req: IncomingMessage, res: ServerResponse) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      seen.push(`${host}${req.url}`);
      const mode = modes.get(host) ?? 'up';
      if (mode === 'silent') return; // never answers; the socket is closed at the end
      if (mode === 'fail') return void res.writeHead(502).end('bad gateway');
      // Docker Hub's /v2/ answers 401 to anonymous callers: an answer all the same.
      res.writeHead(host === 'registry-1.docker.io' ? 401 : 200, { 'content-type': 'text/plain' }).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    refusedPort = CLOSED_PORT;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    for (const a of apps) await a.close();
  });

  const build = async (refused: string[] = [], ip: Record<string, unknown> = {}) => {
    const app = await buildTestServer({
      overrides: {
        proxy: {
          resolve: HOSTS.map((h) => `${h}=127.0.0.1:${refused.includes(h) ? refusedPort : port}`),
          upstreamCa: caFile,
        },
        ip: { reachTimeoutMs: 5000, reachReuseSec: 0, ...ip },
      },
    });
    apps.push(app);
    return app;
  };

  const table: {
    name: string;
    modes: Partial<Record<string, Mode>>;
    expect: Record<string, [boolean, number | null, RegExp | null]>;
  }[] = [
    {
      name: 'all four answer',
      modes: {},
      expect: {
        'github.com': [true, 200, null],
        'pypi.org': [true, 200, null],
        'registry-1.docker.io': [true, 401, null],
        'huggingface.co': [true, 200, null],
      },
    },
    {
      name: 'one refuses, one never answers, one fails with 502',
      modes: { 'github.com': 'refused', 'pypi.org': 'silent', 'huggingface.co': 'fail' },
      expect: {
        'github.com': [false, null, /connection refused/],
        'pypi.org': [false, null, /no answer within 5000 ms/],
        'registry-1.docker.io': [true, 401, null],
        'huggingface.co': [false, 502, /answered 502/],
      },
    },
  ];
  for (const row of table)
    it(row.name, async () => {
      modes.clear();
      for (const [h, m] of Object.entries(row.modes)) if (m && m !== 'refused') modes.set(h, m);
      const refused = Object.entries(row.modes)
        .filter(([, m]) => m === 'refused')
        .map(([h]) => h);
      const app = await build(refused);
      const r = await app.inject({ url: '/rest/api/v1/ip/reach' });
      assert.equal(r.statusCode, 200, r.body);
      const body = r.json();
      assert.equal(body.status, 1);
      assert.equal(body.message, 'success');
      assert.ok(!Number.isNaN(Date.parse(body.data.checkedAt)));
      assert.deepEqual(
        body.data.targets.map((t: { name: string }) => t.name),
        [...HOSTS],
        'every target, in order',
      );
      for (const t of body.data.targets) {
        const [reachable, status, error] = row.expect[t.name]!;
        assert.equal(t.reachable, reachable, t.name);
        assert.equal(t.status, status, t.name);
        if (error) assert.match(t.error, error, t.name);
        else assert.equal(t.error, null, t.name);
        assert.ok(Number.isInteger(t.ms) && t.ms >= 0, `${t.name} has a timing`);
        assert.match(t.url, /^https:\/\//);
      }
    });

  it('shares one round between concurrent callers and reuses it for reach_reuse_sec', async () => {
    modes.clear();
    const app = await build([], { reachReuseSec: 60 });
    seen.length = 0;
    const rs = await Promise.all([1, 2, 3].map(() => app.inject({ url: '/rest/api/v1/ip/reach' })));
    const again = await app.inject({ url: '/rest/api/v1/ip/reach' });
    for (const r of [...rs, again]) assert.equal(r.statusCode, 200);
    assert.equal(seen.filter((s) => s.startsWith('github.com')).length, 1, 'one request to github.com');
    assert.equal(again.json().data.checkedAt, rs[0]!.json().data.checkedAt);
  });

  it('is rate limited per client with 429 and Retry-After in the v1 envelope', async () => {
    const app = await build([], { reachRateLimit: '2/min', reachReuseSec: 60 });
    const a = (ip: string) => app.inject({ url: '/rest/api/v1/ip/reach', remoteAddress: ip });
    assert.equal((await a('198.51.100.1')).statusCode, 200);
    assert.equal((await a('198.51.100.1')).statusCode, 200);
    const third = await a('198.51.100.1');
    assert.equal(third.statusCode, 429);
    assert.ok(third.headers['retry-after']);
    assert.deepEqual(Object.keys(third.json()).sort(), ['data', 'message', 'status']);
    assert.equal(third.json().status, 0);
    assert.equal((await a('198.51.100.2')).statusCode, 200, 'another client has its own budget');
  });

  it('words failures without addresses or stacks', () => {
    const cases: [unknown, RegExp][] = [
      [Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }), /does not resolve/],
      [Object.assign(new Error('x'), { code: 'UND_ERR_CONNECT_TIMEOUT' }), /no answer within 5 ms/],
      [Object.assign(new Error('x'), { cause: { code: 'ECONNREFUSED' } }), /connection refused/],
      [Object.assign(new Error('x'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }), /TLS failed/],
      [new Error('weird'), /^failed$/],
    ];
    for (const [err, re] of cases) assert.match(describeFailure(err, 5), re);
  });
});

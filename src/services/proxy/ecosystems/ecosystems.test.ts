// An ecosystem profile is its definition alone: a toy one, defined only here, is off by default, on
// with DEVUTIL_PROXY_ECOSYSTEMS, served under /proxy/ and on the proxy's host (under /t/<secret>/
// with a secret), and behind every access check and limit of the proxy (client allow-list, rate
// limit, byte budget, concurrency), with its packages counted for the admin dashboard.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { ConfigError, loadConfig } from '../../../config.ts';
import type { ServiceDef } from '../../define.ts';
import { SERVICES } from '../../index.ts';
import { proxyDefinition } from '../definition.ts';
import { defineEcosystem, type EcosystemPlugin } from './define.ts';

const toyPlugin: EcosystemPlugin = async (api) => {
  let release: () => void = () => {};
  api.route({
    method: ['GET', 'HEAD'],
    url: '/toy/*',
    summary: 'says which package was asked for',
    handler: async (req, reply) => {
      const path = api.rawPath(req);
      const name = path.split('/')[2] ?? '';
      const x = await api.gate.open(req, reply, { host: 'toy.example', path }, { package: `toy/${name}` });
      // /toy/slow/<n> is held until the next /toy/release, so two requests overlap.
      if (name === 'slow') await new Promise<void>((r) => (release = r));
      if (name === 'release') release();
      const text = `toy ${path}\n`;
      return api.gate.send(x, reply, {
        status: 200,
        headers: { 'content-type': 'text/plain', 'content-length': String(text.length) },
        body: null,
        text,
        url: new URL('https://toy.example/'),
      });
    },
  });
};

const toy = defineEcosystem({
  name: 'toy',
  title: 'Toy packages',
  summary: 'A toy ecosystem.',
  paths: ['/toy'],
  load: async () => ({ default: toyPlugin }),
  setup: (p) => [{ label: 'toy', text: `toy config set registry ${p.proxy}/toy/` }],
});

const services: readonly ServiceDef[] = SERVICES.map((d) =>
  d.name === 'proxy' ? proxyDefinition([toy]) : d,
);

function server(env: Record<string, string>): Promise<FastifyInstance> {
  return buildTestServer({ env, services });
}

describe('proxy ecosystem profiles', { timeout: 60_000 }, () => {
  it('are named in DEVUTIL_PROXY_ECOSYSTEMS; an unknown name stops start-up naming the variable', () => {
    assert.deepEqual(
      loadConfig({ env: { DEVUTIL_PROXY_ECOSYSTEMS: 'toy' }, services }).config.proxy.ecosystems,
      ['toy'],
    );
    assert.throws(
      () => loadConfig({ env: { DEVUTIL_PROXY_ECOSYSTEMS: 'toy,nope' }, services }),
      (e: unknown) =>
        e instanceof ConfigError && /DEVUTIL_PROXY_ECOSYSTEMS.*nope.*known: toy/.test(e.message),
    );
  });

  it('are off by default: the path is the host-path form and refused as a host', async () => {
    const app = await server({});
    try {
      const r = await app.inject({ url: '/proxy/toy/left-pad' });
      assert.equal(r.statusCode, 400);
      assert.match(r.body, /invalid target host/);
    } finally {
      await app.close();
    }
  });

  describe('enabled', () => {
    let app: FastifyInstance;
    before(async () => {
      app = await server({
        DEVUTIL_PROXY_ECOSYSTEMS: 'toy',
        DEVUTIL_PROXY_HOST: 'proxy.test',
        DEVUTIL_ADMIN_TOKEN: 'admin-token-0123456789',
        DEVUTIL_PROXY_CLIENT_BYTES: '60B/day',
        DEVUTIL_PROXY_MAX_CONCURRENT: '1',
      });
    });
    after(() => app.close());

    it('answers under /proxy/ and at the root of the proxy host, with the raw path', async () => {
      const a = await app.inject({ url: '/proxy/toy/left-pad?x=%2F', remoteAddress: '198.51.100.1' });
      assert.equal(a.statusCode, 200);
      assert.equal(a.body, 'toy /toy/left-pad?x=%2F\n');
      assert.equal(a.headers['x-content-type-options'], 'nosniff', 'with the proxy safety headers');
      const b = await app.inject({
        url: '/toy/left-pad',
        headers: { host: 'proxy.test' },
        remoteAddress: '198.51.100.2',
      });
      assert.equal(b.body, 'toy /toy/left-pad\n');
    });

    it('charges the byte budget and refuses past it with 429', async () => {
      const ip = '198.51.100.3';
      let status = 200;
      for (let i = 0; i < 5 && status === 200; i++)
        status = (await app.inject({ url: '/proxy/toy/budget', remoteAddress: ip })).statusCode;
      assert.equal(status, 429);
      const r = await app.inject({ url: '/proxy/toy/budget', remoteAddress: ip });
      assert.ok(Number(r.headers['retry-after']) > 0);
    });

    it('holds each client to its concurrency share', async () => {
      const ip = '198.51.100.4';
      const slow = app.inject({ url: '/proxy/toy/slow', remoteAddress: ip });
      await new Promise((r) => setTimeout(r, 50));
      const second = await app.inject({ url: '/proxy/toy/other', remoteAddress: ip });
      assert.equal(second.statusCode, 429);
      await app.inject({ url: '/proxy/toy/release', remoteAddress: '198.51.100.5' });
      assert.equal((await slow).statusCode, 200);
    });

    it('counts one IPv6 client by its /64 for the concurrency share, as every other limit does', async () => {
      const slow = app.inject({ url: '/proxy/toy/slow', remoteAddress: '2001:db8:1:2::1' });
      // A neighbour in the same /64 is refused once the slow request holds the share (polled: the
      // slow one may not have been admitted yet when the first neighbour asks).
      let r = await app.inject({ url: '/proxy/toy/n', remoteAddress: '2001:db8:1:2:aaaa::9' });
      for (const until = Date.now() + 10_000; r.statusCode === 200 && Date.now() < until; )
        r = await app.inject({ url: '/proxy/toy/n', remoteAddress: '2001:db8:1:2:aaaa::9' });
      assert.equal(r.statusCode, 429);
      assert.equal(r.body, 'too many concurrent requests\n', 'another address of the same /64 shares it');
      const other = await app.inject({ url: '/proxy/toy/o', remoteAddress: '2001:db8:1:3::1' });
      assert.equal(other.statusCode, 200, 'another /64 is another client');
      await app.inject({ url: '/proxy/toy/release', remoteAddress: '198.51.100.5' });
      assert.equal((await slow).statusCode, 200);
    });

    it('counts its packages for the admin dashboard and lists itself there', async () => {
      await app.inject({ url: '/proxy/toy/counted', remoteAddress: '198.51.100.6' });
      const r = await app.inject({
        url: '/rest/api/v1/admin/stats',
        headers: { authorization: 'Bearer admin-token-0123456789' },
      });
      const data = r.json().data as {
        topProxied: { packages: { key: string }[] };
        proxyEcosystems: string[];
      };
      assert.ok(data.topProxied.packages.some((p) => p.key === 'toy/counted'));
      assert.deepEqual(data.proxyEcosystems, ['toy']);
    });

    it('documents its routes in /openapi.json under the proxy tag', async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json() as {
        paths: Record<string, Record<string, { tags?: string[] }>>;
      };
      const path = Object.keys(doc.paths).find((p) => p.startsWith('/proxy/toy/'));
      assert.ok(path, 'documented');
      assert.deepEqual(doc.paths[path]?.['get']?.tags, ['proxy']);
    });
  });

  it('apply the client allow-list and the rate limit', async () => {
    const app = await server({
      DEVUTIL_PROXY_ECOSYSTEMS: 'toy',
      DEVUTIL_PROXY_CLIENTS: '10.0.0.0/8',
      DEVUTIL_PROXY_RATE_LIMIT: '2/min',
    });
    try {
      const out = await app.inject({ url: '/proxy/toy/x', remoteAddress: '198.51.100.7' });
      assert.equal(out.statusCode, 403);
      const codes: number[] = [];
      for (let i = 0; i < 3; i++)
        codes.push((await app.inject({ url: '/proxy/toy/x', remoteAddress: '10.1.2.3' })).statusCode);
      assert.deepEqual(codes, [200, 200, 429]);
    } finally {
      await app.close();
    }
  });

  it('live under /t/<secret>/ when the proxy has a secret', async () => {
    const app = await server({ DEVUTIL_PROXY_ECOSYSTEMS: 'toy', DEVUTIL_PROXY_SECRET: 'toy-secret-1' });
    try {
      assert.equal((await app.inject({ url: '/proxy/t/toy-secret-1/toy/x' })).body, 'toy /toy/x\n');
      const bare = await app.inject({ url: '/proxy/toy/x' });
      assert.equal(bare.statusCode, 403);
      const page = await app.inject({ url: '/' });
      assert.match(page.body, /toy config set registry http:\/\/[^ ]+\/proxy\/t\/&lt;SECRET&gt;\/toy\//);
      assert.doesNotMatch(page.body, /toy-secret-1/);
    } finally {
      await app.close();
    }
  });

  it('never name the secret in a route: the OpenAPI document and request metrics show /t/{secret}/, and every other prefix is refused', async () => {
    const app = await server({
      DEVUTIL_PROXY_ECOSYSTEMS: 'toy',
      DEVUTIL_PROXY_SECRET: 'toy-secret-1',
      DEVUTIL_PROXY_HOST: 'proxy.test',
    });
    try {
      for (const [url, host] of [
        ['/proxy/t/toy-secret-1/toy/a', undefined],
        ['/t/toy-secret-1/toy/b', 'proxy.test'],
      ] as const) {
        const r = await app.inject({ url, ...(host ? { headers: { host } } : {}) });
        assert.equal(r.statusCode, 200, url);
      }
      // Same length, a prefix of it, longer, empty, encoded: all refused in the proxy's text envelope.
      for (const wrong of ['toy-secret-2', 'toy-secret-', 'toy-secret-1x', '', 'toy%2Dsecret-1']) {
        const r = await app.inject({ url: `/proxy/t/${wrong}/toy/x` });
        assert.equal(r.statusCode, 403, wrong);
        assert.equal(r.body, 'this proxy needs its access prefix /t/<secret>/\n');
      }
      const doc = (await app.inject({ url: '/openapi.json' })).body;
      assert.ok(doc.includes('/proxy/t/{secret}/toy/'), 'the route is documented with a parameter');
      const metrics = (await app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /route="\/proxy\/t\/:secret\/toy\/\*"/);
      for (const text of [doc, metrics, (await app.inject({ url: '/docs/json' })).body])
        assert.ok(!text.includes('toy-secret-1'));
    } finally {
      await app.close();
    }
  });
});

// Adding a utility takes its definition and its folder: a toy one, defined only here, is configured
// from DEVUTIL_TOY_*, served on the base host and on its own host, tagged `svc="toy"`, and listed on
// the home page, with no other file touched.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyPluginAsync } from 'fastify';
import { buildTestServer } from '../../test/helpers/server.ts';
import { ConfigError, configReference, loadConfig } from '../config.ts';
import type { ServiceContext } from '../context.ts';
import { bool, duration, str, url } from '../infra/config/schema.ts';
import { example } from '../page/html.ts';
import { defineService, sectionOf } from './define.ts';
import { SERVICES } from './index.ts';

// What would be the files of a folder src/services/toy/: config.ts, index.ts, page.ts, definition.ts.
const toySection = {
  enabled: bool(true, { doc: 'serve the toy under /toy/' }),
  host: str('', { doc: 'Host header that routes every path to the toy' }),
  publicUrl: url('', { optional: true, doc: 'public URL of the toy' }),
  greeting: str('hello', { doc: 'what the toy says' }),
  pause: duration(1500, { unit: 'ms', doc: 'how long the toy would wait' }),
};
const plugin: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = sectionOf(ctx.config, toy);
  app.get('/toy/hello', async () => ({ said: cfg.greeting, pauseMs: cfg.pause, url: ctx.urls['toy'] }));
};
const toy = defineService({
  name: 'toy',
  config: toySection,
  plugin: async () => ({ default: plugin }),
  host: { mount: '/toy', label: 'Toy' },
  page: async () => ({
    nav: 'Toy',
    title: 'Toy utility',
    lead: 'Says hello from its own folder.',
    body: (p) => example('Say hello', `curl ${p.urls['toy']}/hello`),
  }),
});
const services = [...SERVICES, toy];

describe('a utility added by its definition alone', () => {
  it('gets a config section with env names, defaults, units and errors naming the variable', () => {
    const env = configReference(services).filter((r) => r.section === 'toy');
    assert.deepEqual(
      env.map((r) => [r.env, r.default]),
      [
        ['DEVUTIL_TOY_ENABLED', true],
        ['DEVUTIL_TOY_HOST', ''],
        ['DEVUTIL_TOY_PUBLIC_URL', ''],
        ['DEVUTIL_TOY_GREETING', 'hello'],
        ['DEVUTIL_TOY_PAUSE', '1500ms'],
      ],
    );
    const { config, warnings } = loadConfig({ env: { DEVUTIL_TOY_PAUSE: '2s' }, services });
    assert.equal(sectionOf(config, toy).pause, 2000);
    assert.deepEqual(warnings, []);
    assert.throws(
      () => loadConfig({ env: { DEVUTIL_TOY_PAUSE: 'soon' }, services }),
      (err: unknown) => err instanceof ConfigError && err.message.includes('DEVUTIL_TOY_PAUSE'),
    );
    // Without its definition the same variable is unknown.
    assert.deepEqual(loadConfig({ env: { DEVUTIL_TOY_PAUSE: '2s' } }).warnings, [
      'unknown environment variable DEVUTIL_TOY_PAUSE ignored',
    ]);
  });

  it('is served on the base host and on its own host, tagged with its name', async () => {
    const app = await buildTestServer({
      services,
      env: { DEVUTIL_TOY_HOST: 'toy.example.test', DEVUTIL_TOY_GREETING: 'hi' },
    });
    try {
      const want = { said: 'hi', pauseMs: 1500, url: 'http://toy.example.test' };
      const base = await app.inject({ url: '/toy/hello', headers: { host: 'localhost:8080' } });
      assert.equal(base.statusCode, 200);
      assert.deepEqual(base.json(), want);
      const own = await app.inject({ url: '/hello', headers: { host: 'toy.example.test' } });
      assert.equal(own.statusCode, 200);
      assert.deepEqual(own.json(), want);
      // On its host every path is the toy's: the IP endpoint is not reachable there.
      const other = await app.inject({ url: '/rest/api/v1/ip', headers: { host: 'toy.example.test' } });
      assert.equal(other.statusCode, 404);
      const metrics = (await app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /devutil_http_requests_total\{[^}]*svc="toy"[^}]*route="\/toy\/hello"/);
    } finally {
      await app.close();
    }
  });

  it('appears on the home page: navigation, its public URL and its section', async () => {
    const app = await buildTestServer({ services, env: { DEVUTIL_TOY_HOST: 'toy.example.test' } });
    try {
      const page = (await app.inject({ url: '/' })).body;
      assert.match(page, /<li><a href="#toy">Toy<\/a><\/li>/);
      assert.match(page, /<li><span>Toy<\/span> <code>http:\/\/toy\.example\.test<\/code><\/li>/);
      assert.match(
        page,
        /<section id="toy"[\s\S]*?Toy utility[\s\S]*?curl http:\/\/toy\.example\.test\/hello/,
      );
    } finally {
      await app.close();
    }
  });

  it('is not served, and says so on the page, when its section disables it', async () => {
    const app = await buildTestServer({ services, env: { DEVUTIL_TOY_ENABLED: 'false' } });
    try {
      assert.equal((await app.inject({ url: '/toy/hello' })).statusCode, 404);
      const page = (await app.inject({ url: '/' })).body;
      assert.match(page, /<section id="toy"[\s\S]*?not enabled on this server/);
    } finally {
      await app.close();
    }
  });
});

// Without Java the diagram routes answer 503 with the reason, /readyz says so, the rest works.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';

describe('PlantUML without Java', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { plantuml: { java: '/nonexistent/bin/java' } } });
  });
  after(async () => {
    await app?.close();
  });

  it('answers diagram routes with 503 saying Java 17+ is needed', async () => {
    for (const url of ['/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000', '/plantuml/language']) {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 503, url);
      assert.match(r.body, /Java 17\+/);
      assert.match(r.headers['content-type'] as string, /^text\/plain/);
      assert.ok(r.headers['retry-after']);
      assert.doesNotMatch(r.body, /nonexistent/); // no server path reaches the client
    }
  });

  it('reports it in /readyz', async () => {
    const r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 503);
    const check = r.json().checks.plantuml;
    assert.equal(check.ok, false);
    assert.match(check.detail, /Java 17\+/);
  });

  it('keeps the routes that need no engine working', async () => {
    const coder = await app.inject({ url: '/plantuml/coder/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000' });
    assert.equal(coder.statusCode, 200);
    assert.match(coder.body, /Bob -> Alice : hello/);
    const health = await app.inject({ url: '/healthz' });
    assert.equal(health.statusCode, 200);
    const ip = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.1' });
    assert.equal(ip.statusCode, 200);
  });
});

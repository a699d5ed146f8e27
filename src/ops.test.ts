import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, LogCapture } from '../test/helpers/server.ts';

describe('operations routes', () => {
  let app: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    app = await buildTestServer({ logs });
  });
  after(async () => app.close());

  it('answers /healthz and /readyz', async () => {
    const h = await app.inject({ url: '/healthz' });
    assert.equal(h.statusCode, 200);
    assert.equal(h.json().status, 'ok');
    const r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 200);
    assert.equal(r.json().status, 'ready');
  });

  it('exports request counts, latency and errors per utility and route, and process metrics', async () => {
    await app.inject({ url: '/rest/api/v1/ip' });
    await app.inject({ url: '/rest/api/v1/ip?format=bad' });
    const m = await app.inject({ url: '/metrics' });
    assert.equal(m.statusCode, 200);
    assert.match(m.headers['content-type'] as string, /^text\/plain/);
    assert.match(
      m.body,
      /devutil_http_requests_total\{svc="ip",route="\/rest\/api\/v1\/ip",method="GET",status="200"\} 1/,
    );
    assert.match(m.body, /devutil_http_errors_total\{svc="ip",route="\/rest\/api\/v1\/ip",status="400"\} 1/);
    assert.match(m.body, /devutil_http_request_duration_seconds_bucket\{le="0.005",svc="ip"/);
    assert.match(m.body, /devutil_process_resident_memory_bytes \d+/);
  });

  it('marks the utilities a failing dependency affects degraded, and the node not ready only when none can serve', async () => {
    const { Readiness } = await import('./infra/observe/readiness.ts');
    const enabled = ['files', 'ip', 'plantuml'];
    const r = new Readiness({ timeoutMs: 50 });
    r.add('engine', () => ({ ok: false, detail: 'no java' }), ['plantuml', 'kroki-not-enabled']);
    const one = await r.run(enabled);
    assert.equal(one.status, 'degraded');
    assert.deepEqual(one.degraded, ['plantuml']);
    assert.deepEqual(one.checks['engine'], { ok: false, detail: 'no java', affects: ['plantuml'] });
    r.add('store', async () => {
      throw new Error('down');
    }, ['files']);
    r.add('slow', () => new Promise(() => {}), ['files']);
    const two = await r.run(enabled);
    assert.equal(two.status, 'degraded', 'ip still serves');
    assert.deepEqual(two.degraded, ['files', 'plantuml']);
    assert.deepEqual(two.checks['store'], { ok: false, detail: 'down', affects: ['files'] });
    assert.match(two.checks['slow']?.detail ?? '', /no answer within 50ms/);
    r.add('redis', () => ({ ok: false, detail: 'closed' }), 'all');
    const all = await r.run(enabled);
    assert.equal(all.status, 'not ready');
    assert.deepEqual(all.checks['redis']?.affects, enabled);
  });

  it('answers readiness from the last result while a slow check refreshes it', async () => {
    const { Readiness } = await import('./infra/observe/readiness.ts');
    const r = new Readiness({ maxAgeMs: 0, timeoutMs: 5000 });
    let ok = true;
    let release = () => {};
    r.add('store', async () => {
      if (!ok)
        await new Promise<void>((res) => {
          release = res;
        });
      return { ok };
    }, ['files']);
    assert.equal((await r.report(['files', 'ip'])).status, 'ready');
    ok = false;
    // The check now hangs: the report is the previous one, at once, not a wait.
    assert.equal((await r.report(['files', 'ip'])).status, 'ready');
    release();
    await new Promise((res) => setTimeout(res, 20));
    assert.equal((await r.report(['files', 'ip'])).status, 'degraded');
  });

  it('/readyz lists each dependency with the utilities it affects', async () => {
    const res = await app.inject({ url: '/readyz' });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.status, 'ready');
    assert.deepEqual(body.degraded, []);
    assert.deepEqual(body.checks.blobs.affects.sort(), ['avatar', 'files', 'telegram']);
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  it('guards /metrics with a bearer token when one is configured', async () => {
    const guarded = await buildTestServer({ overrides: { metrics: { token: 'tok-123' } } });
    try {
      assert.equal((await guarded.inject({ url: '/metrics' })).statusCode, 401);
      const ok = await guarded.inject({ url: '/metrics', headers: { authorization: 'Bearer tok-123' } });
      assert.equal(ok.statusCode, 200);
    } finally {
      await guarded.close();
    }
  });

  it('serves the OpenAPI document with every public route and a docs page', async () => {
    const doc = (await app.inject({ url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.paths['/api/ip']?.get);
    assert.ok(doc.paths['/rest/api/v1/ip']?.get);
    const docs = await app.inject({ url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.body, /swagger/i);
  });

  it('tags log lines with the request id (echoing a sane X-Request-Id) and the utility', async () => {
    const r = await app.inject({ url: '/rest/api/v1/ip', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(r.headers['x-request-id'], 'abc-123');
    const lines = logs.lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === 'abc-123');
    assert.ok(lines.length >= 2);
    assert.ok(lines.some((l) => l.svc === 'ip' && l.msg === 'request completed'));
    const hostile = await app.inject({ url: '/rest/api/v1/ip', headers: { 'x-request-id': 'a b\u0007c' } });
    assert.notEqual(hostile.headers['x-request-id'], 'a b\u0007c');
  });
});

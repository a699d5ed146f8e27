import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, LogCapture } from '../../../test/helpers/server.ts';

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

  it('fails readiness on a critical check and only degrades it on an optional one', async () => {
    const { Readiness } = await import('../../context.ts');
    const r = new Readiness();
    r.add('engine', () => ({ ok: false, detail: 'no java' }), { critical: false });
    assert.deepEqual(await r.run(), {
      ok: true,
      degraded: true,
      checks: { engine: { ok: false, detail: 'no java' } },
    });
    r.add('store', async () => {
      throw new Error('down');
    });
    const both = await r.run();
    assert.equal(both.ok, false);
    assert.deepEqual(both.checks['store'], { ok: false, detail: 'down' });
    r.add('slow', () => new Promise(() => {}));
    const slow = await r.run(50);
    assert.match(slow.checks['slow']?.detail ?? '', /no answer within 50ms/);
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

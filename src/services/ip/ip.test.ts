import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';

describe('caller IP endpoints', () => {
  let app: FastifyInstance;
  let trusting: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
    trusting = await buildTestServer({ overrides: { server: { trustProxy: ['127.0.0.0/8'] } } });
  });
  after(async () => {
    await app.close();
    await trusting.close();
  });

  it('answers /rest/api/v1/ip in the seed 2.3 shape', async () => {
    const r = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.4' });
    assert.equal(r.statusCode, 200);
    assert.match(r.headers['content-type'] as string, /^application\/json/);
    assert.deepEqual(r.json(), { status: 1, message: 'success', data: { ip: '198.51.100.4' } });
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  it('answers /api/ip in the legacy 2.2 shape with a V1.2.3-style version', async () => {
    const r = await app.inject({ url: '/api/ip', remoteAddress: '198.51.100.4' });
    const body = r.json();
    assert.deepEqual(Object.keys(body).sort(), ['data', 'msg', 'status', 'version']);
    assert.equal(body.status, 1);
    assert.equal(typeof body.msg, 'string');
    assert.deepEqual(body.data, { ip: '198.51.100.4' });
    assert.match(body.version, /^V\d+\.\d+\.\d+$/);
  });

  it('gives the bare address for ?format=text and Accept: text/plain', async () => {
    const a = await app.inject({ url: '/rest/api/v1/ip?format=text', remoteAddress: '203.0.113.5' });
    assert.equal(a.body, '203.0.113.5\n');
    assert.match(a.headers['content-type'] as string, /^text\/plain/);
    const b = await app.inject({
      url: '/api/ip',
      headers: { accept: 'text/plain' },
      remoteAddress: '203.0.113.5',
    });
    assert.equal(b.body, '203.0.113.5\n');
  });

  it('reports ::ffff:127.0.0.1 as 127.0.0.1', async () => {
    const r = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '::ffff:127.0.0.1' });
    assert.equal(r.json().data.ip, '127.0.0.1');
  });

  it('ignores X-Forwarded-For from an untrusted peer and believes a trusted one', async () => {
    const untrusted = await app.inject({
      url: '/rest/api/v1/ip',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '1.2.3.4' },
    });
    assert.equal(untrusted.json().data.ip, '127.0.0.1');
    const trusted = await trusting.inject({
      url: '/rest/api/v1/ip',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '1.2.3.4' },
    });
    assert.equal(trusted.json().data.ip, '1.2.3.4');
  });

  it('answers HEAD without a body', async () => {
    const r = await app.inject({ method: 'HEAD', url: '/rest/api/v1/ip' });
    assert.equal(r.statusCode, 200);
    assert.equal(r.body, '');
  });

  const hostile: [string, Record<string, string>, number, string][] = [
    ['/rest/api/v1/ip?format=xml', {}, 400, 'message'],
    ['/api/ip?format=xml', {}, 400, 'msg'],
    ['/rest/api/v1/ip?format=%00', {}, 400, 'message'],
    ['/api/ip', { 'x-forwarded-for': '\u0000\u0001' }, 200, 'msg'],
    ['/rest/api/v1/ip', { forwarded: 'for="[', 'x-forwarded-for': 'x'.repeat(8000) }, 200, 'message'],
  ];
  for (const [url, headers, status, field] of hostile) {
    it(`answers ${url} ${JSON.stringify(headers).slice(0, 40)} with ${status} in its envelope`, async () => {
      const r = await app.inject({ url, headers });
      assert.equal(r.statusCode, status);
      const body = r.json();
      assert.equal(body.status, status === 200 ? 1 : 0);
      assert.equal(typeof body[field], 'string');
    });
  }

  it('answers a wrong method with 405, Allow and the family envelope', async () => {
    const legacy = await app.inject({ method: 'POST', url: '/api/ip' });
    assert.equal(legacy.statusCode, 405);
    assert.equal(legacy.headers.allow, 'GET, HEAD');
    assert.deepEqual(Object.keys(legacy.json()).sort(), ['data', 'msg', 'status']);
    const v1 = await app.inject({ method: 'DELETE', url: '/rest/api/v1/ip' });
    assert.equal(v1.statusCode, 405);
    assert.deepEqual(Object.keys(v1.json()).sort(), ['data', 'message', 'status']);
  });
});

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

  it('answers /rest/api/v1/ip in its public shape (docs/protocols/public-interface.md §3.2)', async () => {
    const r = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.4' });
    assert.equal(r.statusCode, 200);
    assert.match(r.headers['content-type'] as string, /^application\/json/);
    assert.deepEqual(r.json(), { status: 1, message: 'success', data: { ip: '198.51.100.4' } });
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  it('writes the JSON answers as compact JSON in the schema order, IPv6 callers included', async () => {
    const v1 = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '2001:db8::7' });
    assert.equal(v1.body, '{"status":1,"message":"success","data":{"ip":"2001:db8::7"}}');
    assert.equal(v1.headers['content-type'], 'application/json; charset=utf-8');
    const legacy = await app.inject({ url: '/api/ip', remoteAddress: '198.51.100.4' });
    assert.match(
      legacy.body,
      /^\{"status":1,"msg":"success","data":\{"ip":"198\.51\.100\.4"\},"version":"V\d+\.\d+\.\d+"\}$/,
    );
    assert.equal(legacy.headers['content-type'], 'application/json; charset=utf-8');
  });

  it('answers /api/ip in the legacy 2.2 shape with a V1.2.3-style version', async () => {
    const r = await app.inject({ url: '/api/ip', remoteAddress: '198.51.100.4' });
    const body = r.json();
    assert.deepEqual(Object.keys(body).sort(), ['data', 'msg', 'status', 'version']);
    assert.equal(body.status, 1);
    assert.equal(body.msg, 'success');
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

  it('names the allowed values when ?details= is not one of them', async () => {
    const r = await app.inject({ url: '/rest/api/v1/ip?details=maybe', remoteAddress: '198.51.100.4' });
    assert.equal(r.statusCode, 400);
    assert.deepEqual(r.json(), {
      status: 0,
      message:
        'invalid request: querystring.details must be equal to one of the allowed values: "", "1", "true", "yes", "0", "false", "no"',
      data: null,
    });
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

  // The exact answer of each family, for the caller 127.0.0.1 (inject's peer) or the address given.
  const legacy = (url: string) => url.startsWith('/api/');
  const ok = (url: string, ip: string) =>
    legacy(url)
      ? { status: 1, msg: 'success', data: { ip } }
      : { status: 1, message: 'success', data: { ip } };
  const badFormat = (url: string) => {
    const m =
      'invalid request: querystring.format must be equal to one of the allowed values: "json", "text"';
    return legacy(url) ? { status: 0, msg: m, data: null } : { status: 0, message: m, data: null };
  };
  // [url, headers, status, address from an untrusted peer, address from a trusted proxy (127.0.0.0/8)]
  const hostile: [string, Record<string, string>, number, string | null, string | null][] = [
    ['/rest/api/v1/ip?format=xml', {}, 400, null, null],
    ['/api/ip?format=xml', {}, 400, null, null],
    ['/rest/api/v1/ip?format=%00', {}, 400, null, null],
    ['/api/ip', { 'x-forwarded-for': '\u0000\u0001' }, 200, '127.0.0.1', '127.0.0.1'],
    [
      '/rest/api/v1/ip',
      { forwarded: 'for="[', 'x-forwarded-for': 'x'.repeat(8000) },
      200,
      '127.0.0.1',
      '127.0.0.1',
    ],
    // A malformed hop stops the walk: what the client typed to its left is never believed.
    ['/rest/api/v1/ip', { 'x-forwarded-for': '1.2.3.4, \u0000' }, 200, '127.0.0.1', '127.0.0.1'],
    ['/rest/api/v1/ip', { 'x-forwarded-for': '999.1.1.1' }, 200, '127.0.0.1', '127.0.0.1'],
    ['/api/ip', { 'x-forwarded-for': '<script>alert(1)</script>' }, 200, '127.0.0.1', '127.0.0.1'],
    ['/rest/api/v1/ip', { 'x-forwarded-for': '[2001:DB8::1]:443' }, 200, '127.0.0.1', '2001:db8::1'],
    ['/rest/api/v1/ip', { 'x-forwarded-for': '::ffff:203.0.113.9' }, 200, '127.0.0.1', '203.0.113.9'],
  ];
  for (const [url, headers, status, untrustedIp, trustedIp] of hostile) {
    const who = untrustedIp ? `: ${untrustedIp}, behind a trusted proxy ${trustedIp}` : ' in its envelope';
    it(`answers ${url} ${JSON.stringify(headers).slice(0, 40)} with ${status}${who}`, async () => {
      for (const [server, ip] of [
        [app, untrustedIp],
        [trusting, trustedIp],
      ] as const) {
        const r = await server.inject({ url, headers });
        assert.equal(r.statusCode, status);
        const { version, ...body } = r.json();
        assert.deepEqual(body, ip === null ? badFormat(url) : ok(url, ip));
        if (legacy(url) && status === 200) assert.match(version, /^V\d+\.\d+\.\d+$/);
        else assert.equal(version, undefined);
      }
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

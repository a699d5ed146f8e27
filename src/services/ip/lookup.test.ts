// ?ip=<address> on both IP routes: the same offline data as ?details=1, in each route's envelope.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';

const GOOGLE = { scope: 'public', country: 'US', asn: 'AS15169', org: 'Google LLC' };

describe('looking up any address with ?ip=', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
  });
  after(async () => app?.close());

  const ask = (url: string) => app.inject({ url, remoteAddress: '198.51.100.9' });

  const table: { url: string; body: unknown }[] = [
    {
      url: '/rest/api/v1/ip?ip=8.8.8.8',
      body: { status: 1, message: 'success', data: { ip: '8.8.8.8', ...GOOGLE } },
    },
    {
      url: '/rest/api/v1/ip?ip=2001:4860:4860:0:0:0:0:8888',
      body: { status: 1, message: 'success', data: { ip: '2001:4860:4860::8888', ...GOOGLE } },
    },
    {
      url: '/rest/api/v1/ip?ip=%3A%3Affff%3A8.8.8.8&details=0',
      body: { status: 1, message: 'success', data: { ip: '8.8.8.8', ...GOOGLE } },
    },
    {
      url: '/rest/api/v1/ip?ip=10.1.2.3',
      body: {
        status: 1,
        message: 'success',
        data: { ip: '10.1.2.3', scope: 'private', country: null, asn: null, org: null },
      },
    },
    {
      url: '/rest/api/v1/ip?ip=%5B::1%5D',
      body: {
        status: 1,
        message: 'success',
        data: { ip: '::1', scope: 'loopback', country: null, asn: null, org: null },
      },
    },
  ];
  for (const row of table)
    it(`${row.url} answers for that address, not the caller`, async () => {
      const r = await ask(row.url);
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json(), row.body);
      assert.equal(r.headers['cache-control'], 'no-store');
    });

  it('/api/ip?ip= answers in the legacy envelope with the version', async () => {
    const r = await ask('/api/ip?ip=8.8.8.8');
    assert.equal(r.statusCode, 200);
    const body = r.json();
    assert.deepEqual(Object.keys(body), ['status', 'msg', 'data', 'version']);
    assert.deepEqual(body.data, { ip: '8.8.8.8', ...GOOGLE });
    assert.match(body.version, /^V\d+\.\d+\.\d+$/);
  });

  it('gives the looked-up address as text for format=text', async () => {
    const r = await ask('/rest/api/v1/ip?ip=2001:DB8::1&format=text');
    assert.equal(r.body, '2001:db8::1\n');
  });

  const bad: { url: string; reason: RegExp }[] = [
    { url: '/rest/api/v1/ip?ip=example.com', reason: /not an IPv4 or IPv6/ },
    { url: '/rest/api/v1/ip?ip=', reason: /empty/ },
    { url: '/rest/api/v1/ip?ip=010.0.0.1', reason: /not an IPv4 or IPv6/ },
    { url: '/rest/api/v1/ip?ip=fe80::1%25eth0', reason: /zone id/ },
    { url: '/rest/api/v1/ip?ip=1.2.3.4%0d%0aSet-Cookie:%20x', reason: /not an IPv4 or IPv6/ },
    { url: `/rest/api/v1/ip?ip=${'9'.repeat(200)}`, reason: /longer than 64/ },
    { url: '/rest/api/v1/ip?ip=%3Cscript%3E&format=text', reason: /not an IPv4 or IPv6/ },
  ];
  for (const row of bad)
    it(`refuses ${row.url.slice(0, 60)} with 400 in the v1 envelope`, async () => {
      const r = await ask(row.url);
      assert.equal(r.statusCode, 400);
      const body = r.json();
      assert.deepEqual(Object.keys(body).sort(), ['data', 'message', 'status']);
      assert.equal(body.status, 0);
      assert.equal(body.data, null);
      assert.match(body.message, row.reason);
    });

  it('refuses a bad address on /api/ip in the legacy envelope', async () => {
    const r = await ask('/api/ip?ip=not-an-ip');
    assert.equal(r.statusCode, 400);
    const body = r.json();
    assert.equal(body.status, 0);
    assert.equal(body.data, null);
    assert.match(body.msg, /not an IPv4 or IPv6/);
  });

  it('leaves the caller answers byte-for-byte as they were', async () => {
    const v1 = await ask('/rest/api/v1/ip');
    assert.equal(v1.body, '{"status":1,"message":"success","data":{"ip":"198.51.100.9"}}');
    const legacy = await ask('/api/ip');
    assert.match(
      legacy.body,
      /^\{"status":1,"msg":"success","data":\{"ip":"198\.51\.100\.9"\},"version":"V\d+\.\d+\.\d+"\}$/,
    );
  });
});

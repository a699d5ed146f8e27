// /rest/api/v1/ip/port/<port>: a real TCP listener on loopback is the caller's open port, port 1 a
// closed one; the check dials the caller's own address and no other, whatever the request says.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { probe, stateOf } from './port-check.ts';

describe('/rest/api/v1/ip/port', { timeout: 60_000 }, () => {
  let listener: Server;
  let open = 0;
  let dialled = 0;
  let app: FastifyInstance;
  let strict: FastifyInstance;
  before(async () => {
    listener = createServer((s) => {
      dialled++;
      s.on('error', () => {});
      s.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    open = (listener.address() as { port: number }).port;
    // The test's caller is on loopback, which the check refuses unless told otherwise.
    app = await buildTestServer({
      overrides: { ip: { portCheckNonPublic: true, portCheckRateLimit: 'off' } },
    });
    strict = await buildTestServer();
  });
  after(async () => {
    await app?.close();
    await strict?.close();
    await new Promise<void>((r) => listener.close(() => r()));
  });

  const check = (path: string, server = app, remoteAddress = '127.0.0.1') =>
    server.inject({ url: `/rest/api/v1/ip/port/${path}`, remoteAddress });

  it("tells the caller's open port from a closed one, with the time each answer took", async () => {
    const before = dialled;
    const a = await check(String(open));
    assert.equal(a.statusCode, 200, a.body);
    const yes = a.json();
    assert.deepEqual(
      { ...yes.data, ms: 0 },
      { ip: '127.0.0.1', port: open, state: 'open', open: true, ms: 0 },
    );
    assert.equal(yes.status, 1);
    assert.ok(Number.isInteger(yes.data.ms) && yes.data.ms >= 0);
    // The listener really was dialled (a handshake, then the check hung up).
    const deadline = Date.now() + 10_000;
    while (dialled === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(dialled, before + 1);

    const b = await check(String(CLOSED_PORT));
    assert.equal(b.statusCode, 200, b.body);
    assert.equal(b.json().data.state, 'closed');
    assert.equal(b.json().data.open, false);
    assert.equal(b.headers['cache-control'], 'no-store');
  });

  it('answers the state alone for ?format=text and Accept: text/plain', async () => {
    assert.equal((await check(`${open}?format=text`)).body, 'open\n');
    const r = await app.inject({
      url: `/rest/api/v1/ip/port/${CLOSED_PORT}`,
      remoteAddress: '127.0.0.1',
      headers: { accept: 'text/plain' },
    });
    assert.equal(r.body, 'closed\n');
  });

  for (const q of ['ip=8.8.8.8', 'host=198.51.100.7', 'target=10.0.0.1&format=json'])
    it(`refuses ?${q} with 400 and dials nothing`, async () => {
      const before = dialled;
      const r = await check(`${open}?${q}`);
      assert.equal(r.statusCode, 400);
      assert.equal(r.json().status, 0);
      assert.match(r.json().message, /checks the address the request comes from/);
      assert.equal(dialled, before);
    });

  it('checks the address after the trusted-proxy walk, never the one a client claims', async () => {
    const r = await app.inject({
      url: `/rest/api/v1/ip/port/${open}`,
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '8.8.8.8' },
    });
    // No proxy is trusted here: the peer is the caller.
    assert.equal(r.json().data.ip, '127.0.0.1');
  });

  for (const p of ['0', '65536', '99999', 'ssh', '-1', '1e3', '22x'])
    it(`refuses port ${p} with 400 in the v1 envelope`, async () => {
      const r = await check(p);
      assert.equal(r.statusCode, 400);
      assert.deepEqual(Object.keys(r.json()).sort(), ['data', 'message', 'status']);
    });

  it('refuses a caller whose address is not public unless DEVUTIL_IP_PORT_CHECK_NON_PUBLIC is on', async () => {
    const before = dialled;
    const r = await check(String(open), strict);
    assert.equal(r.statusCode, 403);
    assert.match(r.json().message, /127\.0\.0\.1 is loopback: only public addresses/);
    assert.equal((await check(String(open), strict, '10.0.0.8')).statusCode, 403);
    assert.equal(dialled, before);
  });

  it('holds each caller to its own tight rate limit (429 with Retry-After)', async () => {
    const limited = await buildTestServer({
      overrides: { ip: { portCheckNonPublic: true, portCheckRateLimit: '2/min' } },
    });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await check(String(CLOSED_PORT), limited)).statusCode);
      assert.deepEqual(codes, [200, 200, 429]);
      const r = await check(String(CLOSED_PORT), limited);
      assert.ok(Number(r.headers['retry-after']) > 0);
      // Another caller has its own budget.
      assert.equal((await check(String(CLOSED_PORT), limited, '127.0.0.2')).statusCode, 200);
    } finally {
      await limited.close();
    }
  });

  it('says filtered for no answer: a refused dial is closed, anything else is not an answer', async () => {
    assert.equal(stateOf('ECONNREFUSED'), 'closed');
    for (const code of ['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EACCES', undefined])
      assert.equal(stateOf(code), 'filtered');
    // A dial ended before any answer (the server closing) reports filtered, never open.
    const ac = new AbortController();
    ac.abort();
    assert.equal((await probe('127.0.0.1', open, 5000, ac.signal)).state, 'filtered');
  });
});

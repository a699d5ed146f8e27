// GET /rest/api/v1/relay without an in-process relay: 503 before the identity exists, then the URI
// from the stored identity; v1 envelopes for errors and wrong methods.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../../../test/helpers/leaks.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { ListenError } from '../../background.ts';
import { relayBackground } from './background.ts';
import { RELAY } from './handle.ts';
import { loadOrCreateIdentity } from './identity.ts';

describe('relay HTTP endpoint (relay in another worker)', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({
      overrides: {
        server: { publicUrl: 'https://dev.example.org' },
        relay: { port: 22067, statusPort: 0 },
      },
    });
  });
  after(() => app.close());

  it('answers 503 in the v1 envelope until the relay identity exists', async () => {
    const res = await app.inject({ method: 'GET', url: '/rest/api/v1/relay' });
    assert.equal(res.statusCode, 503);
    assert.deepEqual(res.json(), {
      status: 0,
      message: 'the relay has not created its identity yet',
      data: null,
    });
  });

  it('then serves relay://<public host>:<port>/?id=<device ID> from the stored identity', async () => {
    const id = loadOrCreateIdentity(app.ctx.dataDir);
    const res = await app.inject({ method: 'GET', url: '/rest/api/v1/relay' });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.status, 1);
    assert.equal(body.data.uri, `relay://dev.example.org:22067/?id=${id.deviceId}`);
    assert.equal(body.data.running, false);
    assert.equal(body.data.stats, null);
    assert.match(body.data.note, /another worker/);
  });

  const hostile: [string, string, number][] = [
    ['POST', '/rest/api/v1/relay', 405],
    ['DELETE', '/rest/api/v1/relay', 405],
    ['GET', '/rest/api/v1/relay/../../etc/passwd', 404],
    ['GET', '/rest/api/v1/relay/%00', 404],
  ];
  for (const [method, url, code] of hostile) {
    it(`answers ${method} ${url} with ${code} in the v1 envelope`, async () => {
      const res = await app.inject({ method: method as 'GET', url });
      assert.equal(res.statusCode, code);
      assert.equal(res.json().status, 0);
      assertNoInternals(res.body, url);
    });
  }
});

describe('relay that cannot take its port', () => {
  it('fails to start with one line naming the port, and the endpoint says why', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    const app = await buildTestServer({ overrides: { relay: { host: '127.0.0.1', port, statusPort: 0 } } });
    try {
      await assert.rejects(relayBackground.start(app.ctx), (err: unknown) => {
        assert.ok(err instanceof ListenError);
        assert.equal(
          err.message,
          `cannot listen on the relay port 127.0.0.1:${port}: address already in use`,
        );
        assert.equal(err.code, 'EADDRINUSE');
        return true;
      });
      const res = await app.inject({ method: 'GET', url: '/rest/api/v1/relay' });
      assert.equal(res.json().data.running, false);
      assert.match(res.json().data.note, /failed to start/);
      assert.equal((await app.inject({ method: 'GET', url: '/rest/api/v1/ip' })).statusCode, 200);
      // Readiness names the relay alone as degraded; the node stays in rotation for the rest.
      const ready = await app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().status, 'degraded');
      assert.deepEqual(ready.json().degraded, ['relay']);
      assert.equal(ready.json().checks.relay.ok, false);
      assert.match(ready.json().checks.relay.detail, /EADDRINUSE|in use/);
    } finally {
      await app.close();
      blocker.close();
    }
  });

  it('stops `devutil serve` with exit code 1 and that line, like a taken HTTP port', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const r = spawnSync(process.execPath, ['bin/devutil.js', 'serve'], {
        cwd: new URL('../../..', import.meta.url).pathname,
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: process.env['PATH'],
          HOME: process.env['HOME'],
          DEVUTIL_PORT: '0',
          DEVUTIL_HOST: '127.0.0.1',
          DEVUTIL_DATA_DIR: tempDir(),
          DEVUTIL_RELAY_HOST: '127.0.0.1',
          DEVUTIL_RELAY_PORT: String(port),
          DEVUTIL_RELAY_STATUS_PORT: '0',
          DEVUTIL_LOG_FORMAT: 'json',
        },
      });
      assert.equal(r.status, 1, `${r.stdout}${r.stderr}`);
      const out = `${r.stdout}${r.stderr}`;
      const fatal = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown })
        .filter((l) => l.level === 60);
      assert.equal(fatal.length, 1, out);
      assert.equal(
        fatal[0]!.msg,
        `cannot listen on the relay port 127.0.0.1:${port}: address already in use`,
      );
      assert.doesNotMatch(out, /serving on/, 'the HTTP server did not go on without the relay');
      assert.doesNotMatch(out, /\\n\s+at /, 'no stack');
    } finally {
      blocker.close();
    }
  });
});

describe('relay handle on the server context', () => {
  it('reports the relay of its own server only: a second server in the process is not running one', async () => {
    const relay = { host: '127.0.0.1', port: 0, statusPort: 0 };
    const one = await buildTestServer({ overrides: { relay } });
    const two = await buildTestServer({ overrides: { relay } });
    const bg = await relayBackground.start(one.ctx);
    try {
      assert.ok(one.ctx.local(RELAY).running);
      assert.equal(two.ctx.local(RELAY).running, null);
      const ready = (await one.inject({ url: '/readyz' })).json();
      assert.deepEqual(ready.checks.relay, {
        ok: true,
        detail: `listening on ${one.ctx.local(RELAY).running?.port}`,
        affects: ['relay'],
      });
      const mine = (await one.inject({ url: '/rest/api/v1/relay' })).json();
      assert.equal(mine.data.running, true);
      assert.equal(mine.data.deviceId, one.ctx.local(RELAY).running?.identity.deviceId);
      loadOrCreateIdentity(two.ctx.dataDir);
      const other = (await two.inject({ url: '/rest/api/v1/relay' })).json();
      assert.equal(other.data.running, false);
      assert.notEqual(other.data.deviceId, mine.data.deviceId);
    } finally {
      await bg.close();
      await one.close();
      await two.close();
    }
    assert.equal(one.ctx.local(RELAY).running, null, 'closing the relay clears its handle');
  });
});

// Dual-stack by default: devutil started with no DEVUTIL_HOST (and no relay host) answers real curl
// over IPv6 ([::1]) and IPv4 on the same port, and shows and counts IPv4 callers as plain IPv4
// (they reach a `::` socket as ::ffff:a.b.c.d).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { clientIdentity, joinRelay } from '../../src/services/relay/client.ts';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { toolSkip } from '../helpers/tools.ts';

function curl(...args: string[]): string {
  return execFileSync('curl', ['-sSf', '--max-time', '20', ...args], { encoding: 'utf8' });
}

describe('listening on IPv6 and IPv4 by default', {
  skip: toolSkip('curl') || toolSkip('redis-server'),
}, () => {
  let p: DevutilProcess;
  let redis: RedisHandle;
  let relayPort = 0;
  let statusPort = 0;
  before(async () => {
    redis = await startRedis();
    relayPort = await freePort();
    statusPort = await freePort();
    p = await startDevutilProcess({
      DEVUTIL_HOST: undefined, // the documented default
      DEVUTIL_REDIS_URL: redis.url,
      DEVUTIL_REDIS_KEY_PREFIX: 'ds:',
      DEVUTIL_IP_RATE_LIMIT: '1000/min',
      DEVUTIL_RELAY_ENABLED: 'true',
      DEVUTIL_RELAY_PORT: String(relayPort),
      DEVUTIL_RELAY_STATUS_PORT: String(statusPort),
    });
    // The relay starts right after the HTTP listener.
    for (let i = 0; i < 200 && !/relay listening/.test(p.output()); i++)
      await new Promise((r) => setTimeout(r, 50));
  });
  after(async () => {
    await p?.stop();
    await redis?.stop();
  });

  it('answers curl http://[::1]:<port>/api/ip with the IPv6 caller', () => {
    const body = JSON.parse(curl(`http://[::1]:${p.port}/api/ip`)) as { data: { ip: string } };
    assert.equal(body.data.ip, '::1');
    assert.equal(curl(`http://[::1]:${p.port}/rest/api/v1/ip?format=text`).trim(), '::1');
  });

  it('shows an IPv4 caller on the same socket as plain IPv4, in JSON, text and the home page', () => {
    const body = JSON.parse(curl('-4', `http://127.0.0.1:${p.port}/rest/api/v1/ip`)) as {
      data: { ip: string };
    };
    assert.equal(body.data.ip, '127.0.0.1');
    assert.equal(curl('-4', `http://127.0.0.1:${p.port}/api/ip?format=text`).trim(), '127.0.0.1');
    assert.match(curl('-4', `http://127.0.0.1:${p.port}/`), /id="ip-value">127\.0\.0\.1</);
  });

  it('keys rate limits and logs by the plain IPv4 address', async () => {
    curl('-4', '-H', 'x-request-id: ds-v4', `http://127.0.0.1:${p.port}/api/ip`);
    const r = new Redis(redis.url);
    try {
      const keys = await r.keys('ds:*');
      assert.ok(keys.includes('ds:c:rl:ip:127.0.0.1'), keys.join(' '));
      // An IPv6 caller counts by its /64 (the client key).
      assert.ok(keys.includes('ds:c:rl:ip:::/64'), keys.join(' '));
      assert.deepEqual(
        keys.filter((k) => k.includes('ffff')),
        [],
      );
    } finally {
      r.disconnect();
    }
    const line = await p.waitForLine((l) => l.includes('"ds-v4"') && l.includes('request completed'));
    assert.match(line, /"remoteAddress":"127\.0\.0\.1"/);
  });

  it('serves the Syncthing relay and its status port over IPv6 and IPv4 too', async () => {
    for (const host of ['::1', '127.0.0.1']) {
      const j = await joinRelay(host, relayPort, clientIdentity());
      assert.deepEqual(j.reply, { type: 'response', code: 0, message: 'success' });
      j.stream.close();
    }
    const status = JSON.parse(curl(`http://[::1]:${statusPort}/status`)) as Record<string, unknown>;
    assert.equal(typeof status['numConnections'], 'number');
  });
});

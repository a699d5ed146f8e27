// Relay pool registration against a stand-in pool (test/fixtures/relay/pool.ts): the relay POSTs
// its URL with its own certificate as the TLS client certificate, the pool checks the certificate's
// device ID against the URL, tests the relay and answers the eviction time; the relay rejoins
// before it, retries after a failure, and gives up on 401 as strelaysrv does.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import {
  POOL_HOST,
  POOL_URL,
  type StandInPool,
  startStandInPool,
} from '../../../test/fixtures/relay/pool.ts';
import { type ForwardProxy, startSquid } from '../../../test/helpers/forward-proxy.ts';
import { buildTestServer, LogCapture, tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { waitFor } from '../../../test/helpers/wait.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { relayBackground } from './background.ts';
import { clientIdentity } from './client.ts';
import { RELAY } from './handle.ts';
import { goDuration, PoolMembership, poolHost, poolRelayUrl } from './pool.ts';
import { formatDeviceId } from './protocol/device-id.ts';

describe('relay URL for pools', { timeout: 10_000 }, () => {
  it('writes timings as Go does and sorts the query as url.Values.Encode', () => {
    assert.deepEqual([60_000, 120_000, 90_000, 1500, 500, 3_600_000].map(goDuration), [
      '1m0s',
      '2m0s',
      '1m30s',
      '1.5s',
      '500ms',
      '1h0m0s',
    ]);
    assert.equal(
      poolRelayUrl({
        host: '2001:db8::7',
        port: 22067,
        deviceId: 'ID',
        pingIntervalMs: 60_000,
        networkTimeoutMs: 120_000,
        statusPort: 22070,
        providedBy: 'me & you',
      }),
      'relay://[2001:db8::7]:22067/?id=ID&networkTimeout=2m0s&pingInterval=1m0s&providedBy=me+%26+you&statusAddr=%3A22070',
    );
  });

  it('advertises an address as it is, resolves a name, and leaves the host empty when nothing usable is known', async () => {
    const lookup = async (h: string) => {
      if (h === 'relay.example.org')
        return [
          { address: '2001:db8::1', family: 6 },
          { address: '198.51.100.7', family: 4 },
        ];
      if (h === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    assert.equal(await poolHost('203.0.113.9', lookup), '203.0.113.9');
    assert.equal(await poolHost('[2001:db8::5]', lookup), '2001:db8::5');
    assert.equal(await poolHost('relay.example.org', lookup), '198.51.100.7');
    assert.equal(await poolHost('localhost', lookup), '');
    assert.equal(await poolHost('127.0.0.1', lookup), '');
    assert.equal(await poolHost('nowhere.invalid', lookup), '');
  });
});

describe('relay pool registration', { timeout: 120_000 }, () => {
  let pool: StandInPool;
  before(async () => {
    pool = await startStandInPool(tempDir('devutil-pool-'));
  });
  after(() => pool?.close());

  async function relayServer(
    relay: Record<string, unknown>,
    logs?: LogCapture,
    egress: Record<string, unknown> = { resolve: [pool.resolve] },
  ) {
    const app = await buildTestServer({
      ...(logs ? { logs } : {}),
      overrides: {
        egress,
        relay: {
          host: '127.0.0.1',
          port: 0,
          statusPort: 0,
          pools: [POOL_URL],
          poolCa: pool.caFile,
          ...relay,
        },
      },
    });
    const bg = await relayBackground.start(app.ctx);
    return {
      app,
      close: async () => {
        await bg.close();
        await app.close();
      },
    };
  }

  it('registers with the pool presenting its own certificate, and passes the pool’s test', async () => {
    const from = pool.joins.length;
    const s = await relayServer({});
    try {
      await waitFor(() => (pool.joins[from]?.status ?? 0) !== 0, 'a join');
      const join = pool.joins[from];
      const relay = s.app.ctx.local(RELAY).running;
      assert.ok(relay && join);
      assert.equal(join.error, null);
      assert.equal(join.status, 200);
      assert.equal(join.certId, relay.identity.deviceId);
      // localhost is no address for others: the host is left to the pool, which uses the request's.
      assert.equal(
        join.url,
        `relay://:${relay.port}/?id=${relay.identity.deviceId}&networkTimeout=2m0s&pingInterval=1m0s`,
      );
      assert.equal(
        join.published,
        `relay://127.0.0.1:${relay.port}/?id=${relay.identity.deviceId}&networkTimeout=2m0s&pingInterval=1m0s`,
      );
      await waitFor(() => s.app.ctx.local(RELAY).pools()[0]?.state === 'joined', 'the joined state');
      const api = (await s.app.inject({ url: '/rest/api/v1/relay' })).json();
      const [p] = api.data.pools;
      assert.equal(p.pool, POOL_URL);
      assert.equal(p.state, 'joined');
      // The pool said one hour: the relay comes back at four fifths of it.
      const inMin = (Date.parse(p.nextAt) - Date.parse(p.joinedAt)) / 60_000;
      assert.ok(inMin > 47.9 && inMin < 48.1, `rejoin in ${inMin} min`);
      assert.deepEqual((relay.status()['options'] as { pools: string[] }).pools, [POOL_URL]);
    } finally {
      await s.close();
    }
  });

  it('posts the advertised address as it is; the certificate lets the pool take it from another address', async () => {
    const from = pool.joins.length;
    const s = await relayServer({ extAddress: '203.0.113.7', providedBy: 'devutil test' });
    try {
      await waitFor(() => (pool.joins[from]?.status ?? 0) !== 0, 'a join');
      const join = pool.joins[from];
      assert.equal(join?.status, 200, join?.error ?? '');
      assert.match(join?.url ?? '', /^relay:\/\/203\.0\.113\.7:\d+\/\?id=.*&providedBy=devutil\+test$/);
      assert.equal(join?.published, join?.url);
    } finally {
      await s.close();
    }
  });

  it('joins no pool while a token keeps the relay private', async () => {
    const logs = new LogCapture();
    const from = pool.joins.length;
    const s = await relayServer({ token: 'private-relay-token' }, logs);
    try {
      assert.deepEqual(s.app.ctx.local(RELAY).pools(), []);
      assert.match(logs.text(), /relay pools not joined: a token keeps the relay private/);
      const running = s.app.ctx.local(RELAY).running;
      assert.ok(running);
      assert.deepEqual((running.status()['options'] as { pools: string[] }).pools, []);
      assert.equal(pool.joins.length, from);
    } finally {
      await s.close();
    }
  });

  // The pool's name resolves to a documentation-range address where nothing listens: only squid's
  // mapping reaches the stand-in, and only egress.allowCidrs lets the guard dial that address.
  describe('through the outbound proxy', { skip: toolSkip('squid', ['-v']) }, () => {
    const STAND_IN = '192.0.2.10';
    let squid: ForwardProxy;
    before(async () => {
      squid = await startSquid({ map: { [`${STAND_IN}:443`]: pool.resolve.split('=')[1]! } });
    });
    after(() => squid?.close());

    it('joins through egress.proxy, at an address egress.allowCidrs allows', async () => {
      const from = pool.joins.length;
      const s = await relayServer({}, undefined, {
        resolve: [`${POOL_HOST}=${STAND_IN}:443`],
        proxy: squid.url,
        allowCidrs: ['192.0.2.0/24'],
      });
      try {
        const first = () => s.app.ctx.local(RELAY).pools()[0];
        await waitFor(() => first()?.state !== 'joining', 'the pool’s first answer');
        assert.equal(first()?.state, 'joined', first()?.lastError ?? '');
        assert.equal(pool.joins[from]?.status, 200);
        assert.equal(pool.joins[from]?.certId, s.app.ctx.local(RELAY).running?.identity.deviceId);
        assert.ok(squid.connects().includes(`${STAND_IN}:443`), squid.log());
      } finally {
        await s.close();
      }
    });
  });

  describe('answers', () => {
    const me = clientIdentity();
    const logger = pino({ level: 'silent' });
    const membership = (
      relayId: string,
      cert = true,
      o: Partial<ConstructorParameters<typeof PoolMembership>[0]> = {},
    ) => {
      const client = createEgress({
        resolve: [pool.resolve],
        caFile: pool.caFile,
        ...(cert ? { clientCert: { cert: me.certPem, key: me.keyPem } } : {}),
      });
      const m = new PoolMembership({
        pools: [POOL_URL],
        http: client,
        logger,
        // A relay that is not there: the pool refuses before testing, or the test fails.
        relayUrl: async () => `relay://198.51.100.9:1/?id=${relayId}`,
        retryMs: 50,
        minRejoinMs: 50,
        ...o,
      });
      return {
        m,
        close: async () => {
          m.close();
          await client.close();
        },
      };
    };

    it('is refused by the pool (400) when the URL names another device than the certificate, and retries', async () => {
      const other = formatDeviceId(clientIdentity().raw);
      const from = pool.joins.length;
      const { m, close } = membership(other);
      try {
        m.start();
        await waitFor(() => (pool.joins[from + 1]?.status ?? 0) !== 0, 'a retry');
        for (const j of pool.joins.slice(from, from + 2)) {
          assert.equal(j.certId, formatDeviceId(me.raw));
          assert.equal(j.status, 400);
          assert.equal(j.error, 'mismatched advertised id and join request cert');
        }
        const [st] = m.status();
        assert.equal(st?.state, 'retrying');
        assert.match(st?.lastError ?? '', /^400 mismatched advertised id/);
      } finally {
        await close();
      }
    });

    it('stops on 401 (an address the pool will not take without a certificate)', async () => {
      const from = pool.joins.length;
      const { m, close } = membership(formatDeviceId(me.raw), false);
      try {
        m.start();
        await waitFor(() => m.status()[0]?.state === 'stopped', 'the stop');
        assert.equal(pool.joins.length, from + 1);
        assert.equal(pool.joins[from]?.certId, null);
        // Nothing is scheduled: no retry will come.
        assert.equal(m.status()[0]?.nextAt, null);
      } finally {
        await close();
      }
    });

    it('tries again after a pool error, a rate limit or a failed relay test', async () => {
      pool.fail.push(500, 429);
      const from = pool.joins.length;
      const { m, close } = membership(formatDeviceId(me.raw));
      try {
        m.start();
        // 500, 429, then the relay test (nothing listens at the URL): each answer leads to another POST.
        await waitFor(() => (pool.joins[from + 2]?.status ?? 0) !== 0, 'three tries');
        assert.deepEqual(
          pool.joins.slice(from, from + 3).map((j) => j.status),
          [500, 429, 400],
        );
      } finally {
        await close();
      }
    });
  });
});

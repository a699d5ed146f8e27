// The outbound proxy and the operator's allowed ranges: NO_PROXY and proxy URL parsing, the allow-list
// (NAT64 included), and the egress client through a real tinyproxy: CONNECT with credentials, TLS to
// the target inside the tunnel, the guard checking the target's own address before any tunnel, names
// this machine cannot resolve left to the proxy, NO_PROXY and loopback overrides going direct.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createHttps, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makePki } from '../../../test/fixtures/proxy/tls.ts';
import { type ForwardProxy, startTinyproxy } from '../../../test/helpers/forward-proxy.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import {
  type AddressLookup,
  BlockedAddressError,
  createEgress,
  type Egress,
  type EgressOptions,
} from './client.ts';
import { addressPolicy } from './netguard.ts';
import { noProxyMatcher, normaliseProxyUrl } from './route.ts';
import { EgressProxyError } from './tunnel.ts';

describe('allowed ranges', () => {
  const p = addressPolicy(['10.20.0.0/16', '192.0.2.10', '64:ff9b::/96', 'fd00:1::/32']);
  const table: [string, boolean][] = [
    ['10.20.1.2', false],
    ['10.21.0.1', true],
    ['192.0.2.10', false],
    ['192.0.2.11', true],
    ['127.0.0.1', true],
    ['140.82.112.3', false],
    ['fd00:1::5', false],
    ['fd00:2::5', true],
    ['::ffff:10.20.0.9', false],
    ['::ffff:10.30.0.9', true],
    // NAT64: allowed when the IPv4 address it carries is public or allowed itself.
    ['64:ff9b::8c52:7003', false],
    ['64:ff9b::140.82.112.3', false],
    ['64:ff9b::a14:1', false],
    ['64:ff9b::7f00:1', true],
    ['64:ff9b::a9fe:a9fe', true],
  ];
  for (const [addr, refused] of table)
    it(`${refused ? 'refuses' : 'lets through'} ${addr}`, () => assert.equal(p.refuses(addr), refused));

  it('refuses every non-public address when nothing is allowed', () => {
    for (const a of ['10.20.1.2', '64:ff9b::8c52:7003', '192.0.2.10'])
      assert.ok(addressPolicy([]).refuses(a));
  });
});

describe('NO_PROXY and proxy URLs', () => {
  const direct = noProxyMatcher([
    '.corp.example',
    'intra.example:8443',
    '10.0.0.0/8',
    '::1',
    '[fd00::1]:443',
  ]);
  const table: [string, number, string | undefined, boolean][] = [
    ['corp.example', 443, undefined, true],
    ['git.corp.example', 443, undefined, true],
    ['notcorp.example', 443, undefined, false],
    ['intra.example', 8443, undefined, true],
    ['intra.example', 443, undefined, false],
    ['10.1.2.3', 443, undefined, true],
    ['mirror.test', 443, '10.9.9.9', true],
    ['mirror.test', 443, '192.0.2.1', false],
    ['::1', 80, undefined, true],
    ['[fd00::1]', 443, undefined, true],
    ['registry.npmjs.org', 443, undefined, false],
  ];
  for (const [host, port, address, want] of table)
    it(`${want ? 'bypasses' : 'proxies'} ${host}:${port}${address ? ` (at ${address})` : ''}`, () =>
      assert.equal(direct(host, port, address), want));

  it('bypasses everything for *', () => assert.equal(noProxyMatcher([' * '])('a.example', 1), true));

  it('reads proxy URLs as HTTPS_PROXY has them, and refuses what cannot be one', () => {
    assert.deepEqual(normaliseProxyUrl('proxy.corp:3128'), { url: 'http://proxy.corp:3128' });
    assert.deepEqual(normaliseProxyUrl('http://u:p%40ss@proxy.corp:3128/'), {
      url: 'http://u:p%40ss@proxy.corp:3128',
    });
    assert.match(JSON.stringify(normaliseProxyUrl('socks5://proxy.corp:1080')), /socks5 is not supported/);
    assert.match(JSON.stringify(normaliseProxyUrl('http://proxy.corp:3128/path')), /no path/);
  });
});

describe('egress through a real proxy (tinyproxy)', {
  skip: toolSkip('tinyproxy', ['-v']),
  timeout: 120_000,
}, () => {
  let proxy: ForwardProxy;
  let http: Server;
  let https: HttpsServer;
  let caFile = '';
  let hits = 0;
  const clients: Egress[] = [];
  const port = (s: Server) => (s.address() as AddressInfo).port;

  before(async () => {
    const pki = makePki(tempDir('devutil-egress-pki-'), ['localhost']);
    caFile = pki.caFile;
    const handler = (req: { headers: { host?: string } }, res: { end(s: string): void }) => {
      hits++;
      res.end(`hello ${req.headers.host}`);
    };
    http = createServer(handler);
    https = createHttps({ cert: pki.cert, key: pki.key }, handler);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
    proxy = await startTinyproxy({ auth: { user: 'ops', password: 's3cret' } });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    for (const s of [http, https]) {
      s.closeAllConnections();
      s.close();
    }
    await proxy?.close();
  });

  const egress = (policy: Partial<NonNullable<EgressOptions['policy']>>, o: Partial<EgressOptions> = {}) => {
    const d = createEgress({
      timeoutMs: 20_000,
      policy: { proxy: proxy.url, noProxy: [], allowCidrs: [], ...policy },
      ...o,
    });
    clients.push(d);
    return d;
  };
  const get = async (d: Egress, url: string) => {
    const u = new URL(url);
    const res = await d.request({ origin: u.origin, path: u.pathname, method: 'GET' });
    return { status: res.statusCode, text: await res.body.text() };
  };
  /** Waits (bounded) for tinyproxy to log a CONNECT to `target`. */
  const connected = async (target: string) => {
    const until = Date.now() + 10_000;
    while (!proxy.connects().includes(target)) {
      if (Date.now() > until) assert.fail(`no CONNECT ${target} in the proxy's log:\n${proxy.log()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('tunnels with the credentials of the proxy URL to an allowed address', async () => {
    const target = `127.0.0.1:${port(http)}`;
    const r = await get(egress({ allowCidrs: ['127.0.0.0/8'] }), `http://${target}/`);
    assert.deepEqual(r, { status: 200, text: `hello ${target}` });
    await connected(target);
  });

  it('speaks TLS to the target inside the tunnel, verifying it by name with the extra CA', async () => {
    const r = await get(
      egress({ allowCidrs: ['127.0.0.1'] }, { caFile }),
      `https://localhost:${port(https)}/`,
    );
    assert.deepEqual(r, { status: 200, text: `hello localhost:${port(https)}` });
    await connected(`localhost:${port(https)}`);
  });

  for (const host of ['127.0.0.1', 'localhost'])
    it(`refuses ${host} before asking the proxy, naming the address and the setting`, async () => {
      const before = { hits, connects: proxy.connects().length };
      await assert.rejects(get(egress({}), `http://${host}:${port(http)}/`), (e: unknown) => {
        assert.ok(e instanceof BlockedAddressError, String(e));
        assert.equal(e.address, '127.0.0.1');
        assert.match(
          e.message,
          /127\.0\.0\.1(,| is) a non-public address; DEVUTIL_EGRESS_ALLOW_CIDRS can allow its range/,
        );
        return true;
      });
      assert.deepEqual({ hits, connects: proxy.connects().length }, before, 'nothing reached the proxy');
    });

  it('leaves a name this machine cannot resolve to the proxy, which resolves it', async () => {
    const notHere: AddressLookup = (host, _o, cb) =>
      process.nextTick(
        cb,
        Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }),
        [],
      );
    const r = await get(egress({}, { lookup: notHere }), `http://localhost:${port(http)}/`);
    assert.equal(r.status, 200);
    await connected(`localhost:${port(http)}`);
  });

  it('goes direct for NO_PROXY entries and for loopback overrides', async () => {
    const before = proxy.connects().length;
    const literal = `http://127.0.0.1:${port(http)}/`;
    assert.equal(
      (await get(egress({ allowCidrs: ['127.0.0.1'], noProxy: ['127.0.0.1'] }), literal)).status,
      200,
    );
    const ov = egress({}, { resolve: [`fixture.test=127.0.0.1:${port(http)}`] });
    assert.deepEqual(await get(ov, 'http://fixture.test/'), { status: 200, text: 'hello fixture.test' });
    assert.equal(proxy.connects().length, before, 'the proxy was not asked');
  });

  it('reports a proxy that refuses the credentials, naming the proxy but not the password', async () => {
    const wrong = proxy.url.replace('s3cret', 'wrong');
    await assert.rejects(
      get(egress({ proxy: wrong, allowCidrs: ['127.0.0.1'] }), `http://127.0.0.1:${port(http)}/`),
      (e: unknown) => {
        assert.ok(e instanceof EgressProxyError, String(e));
        // tinyproxy answers wrong credentials with 401 (squid and others with 407).
        assert.equal(e.status, 401);
        assert.match(e.message, new RegExp(`proxy 127\\.0\\.0\\.1:${proxy.port} answered 401 .*credentials`));
        assert.doesNotMatch(e.message, /wrong|s3cret/);
        return true;
      },
    );
  });

  it('reports a proxy that cannot be reached', async () => {
    const down = egress({ proxy: `http://127.0.0.1:${CLOSED_PORT}`, allowCidrs: ['127.0.0.1'] });
    await assert.rejects(get(down, `http://127.0.0.1:${port(http)}/`), (e: unknown) => {
      assert.ok(e instanceof EgressProxyError, String(e));
      assert.match(
        e.message,
        new RegExp(`cannot reach the outbound proxy 127\\.0\\.0\\.1:${CLOSED_PORT} \\(ECONNREFUSED\\)`),
      );
      return true;
    });
  });
});

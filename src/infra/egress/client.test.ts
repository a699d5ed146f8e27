// The outbound client: the address guard table, overrides, timeouts and size caps, against real
// sockets on loopback.
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { createServer, type Server } from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { errors } from 'undici';
import {
  type AddressLookup,
  BlockedAddressError,
  createEgress,
  createGuardedLookup,
  type Egress,
  guardedLookup,
  isBlocked,
  RequestAbort,
} from './client.ts';
import { isBlockedAddress, parseResolve } from './netguard.ts';

const PUBLIC_FIRST: dns.LookupAddress[] = [
  { address: '140.82.112.3', family: 4 },
  { address: '127.0.0.1', family: 4 },
];
const PRIVATE_FIRST: dns.LookupAddress[] = [
  { address: '10.1.2.3', family: 4 },
  { address: '151.101.0.223', family: 4 },
];

const realLookup = dns.lookup;
/** Answers the given names from the table (every other name through the real resolver). The
 * client imports `lookup` from node:dns; syncBuiltinESMExports updates that binding too. */
function fakeDns(table: Record<string, dns.LookupAddress[]>): void {
  const fake = (host: string, opts: unknown, cb: (e: Error | null, a: dns.LookupAddress[]) => void) => {
    const hit = table[host];
    if (!hit) return (realLookup as (...a: unknown[]) => void)(host, opts, cb);
    process.nextTick(cb, null, hit);
  };
  (dns as { lookup: unknown }).lookup = fake;
  syncBuiltinESMExports();
}
function restoreDns(): void {
  (dns as { lookup: unknown }).lookup = realLookup;
  syncBuiltinESMExports();
}

describe('address guard', () => {
  const blocked = [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '198.51.100.7',
    '::',
    '::1',
    'fc00::1',
    'fd12::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a00:1',
    'ff02::1',
  ];
  for (const a of blocked) it(`refuses ${a}`, () => assert.ok(isBlockedAddress(a)));
  for (const a of ['140.82.112.3', '151.101.0.223', '2606:4700::1111'])
    it(`accepts ${a}`, () => assert.ok(!isBlockedAddress(a)));

  it('refuses a name that resolves to loopback, in both callback shapes', async () => {
    for (const all of [true, false]) {
      const err = await new Promise<Error | null>((resolve) =>
        guardedLookup('localhost', { all }, (e) => resolve(e)),
      );
      assert.match(String(err?.message), /non-public/);
    }
  });

  // A name with several addresses is refused when any of them is not public: a guard that checked
  // only the first would let the connection reach the private one (DNS answers in any order).
  describe('a name that resolves to a public and a private address', () => {
    afterEach(restoreDns);
    for (const order of [PUBLIC_FIRST, PRIVATE_FIRST])
      for (const all of [true, false])
        it(`is refused (${order.map((a) => a.address).join(', ')}; all: ${all})`, async () => {
          fakeDns({ 'mixed.test': order });
          const got = await new Promise<{ err: Error | null; addr: unknown }>((resolve) =>
            guardedLookup('mixed.test', { all }, (err, addr) => resolve({ err, addr })),
          );
          assert.ok(
            got.err instanceof BlockedAddressError,
            `refused, got ${String(got.err)} ${String(got.addr)}`,
          );
        });

    it('accepts a name whose every address is public', async () => {
      fakeDns({ 'public.test': [PUBLIC_FIRST[0]!, { address: '2606:4700::1111', family: 6 }] });
      const got = await new Promise<{ err: Error | null; addr: unknown }>((resolve) =>
        guardedLookup('public.test', { all: true }, (err, addr) => resolve({ err, addr })),
      );
      assert.equal(got.err, null);
      assert.equal((got.addr as unknown[]).length, 2);
    });
  });
});

describe('egress client', () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  const clients: Egress[] = [];
  before(async () => {
    server = createServer((req, res) => {
      hits++;
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2000);
      if (req.url === '/big') return void res.end(Buffer.alloc(64 * 1024, 97));
      res.end(`hello ${req.headers.host}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    server.closeAllConnections();
    server.close();
  });

  const egress = (o: Partial<Parameters<typeof createEgress>[0]> = {}) => {
    const d = createEgress({ timeoutMs: 5000, ...o });
    clients.push(d);
    return d;
  };
  const get = async (d: Egress, url: string) => {
    const res = await d.request({ origin: new URL(url).origin, path: new URL(url).pathname, method: 'GET' });
    return { status: res.statusCode, text: await res.body.text() };
  };

  for (const target of ['127.0.0.1', 'localhost', '[::1]', '0.0.0.0'])
    it(`refuses http://${target} when it is not in the overrides`, async () => {
      const before = hits;
      await assert.rejects(get(egress(), `http://${target}:${port}/`), (e: unknown) => isBlocked(e));
      assert.equal(hits, before, 'no request reached the server');
    });

  // Every reserved range, dialled as a literal (no lookup happens, so only the connect-time check
  // can refuse it): the cloud metadata address, private, shared, documentation, benchmark,
  // multicast and reserved ranges, and the IPv6 forms that embed an IPv4 address.
  const literals = [
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.254',
    '100.64.0.1',
    '127.0.0.2',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.254',
    '192.0.0.8',
    '192.0.2.1',
    '192.88.99.1',
    '192.168.0.1',
    '198.18.0.1',
    '198.51.100.1',
    '203.0.113.1',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '[::]',
    '[::ffff:10.0.0.1]',
    '[::ffff:a9fe:a9fe]',
    '[64:ff9b::a9fe:a9fe]',
    '[64:ff9b:1::1]',
    '[100::1]',
    '[2001::1]',
    '[2001:db8::1]',
    '[2002:a00:1::1]',
    '[fc00::1]',
    '[fd00:ec2::254]',
    '[fe80::1]',
    '[fec0::1]',
    '[ff02::1]',
  ];
  for (const target of literals)
    it(`refuses to dial the literal ${target} (guard, not a failed connection)`, async () => {
      await assert.rejects(get(egress({ connectTimeoutMs: 1000 }), `http://${target}/`), (e: unknown) =>
        isBlocked(e),
      );
    });

  it('reaches loopback through an override, keeping the Host the caller asked for', async () => {
    const d = egress({ resolve: [`fixture.test=127.0.0.1:${port}`] });
    assert.deepEqual(await get(d, 'http://fixture.test/'), { status: 200, text: 'hello fixture.test' });
    await assert.rejects(get(d, `http://127.0.0.1:${port}/`), BlockedAddressError);
  });

  it('refuses a name that resolves to a public address and this loopback server', async () => {
    // Unguarded, the connection would reach the fixture server through the second address.
    fakeDns({ 'mixed.test': PUBLIC_FIRST });
    try {
      const before = hits;
      const d = egress({ connectTimeoutMs: 1000 });
      await assert.rejects(get(d, `http://mixed.test:${port}/`), (e: unknown) => isBlocked(e));
      assert.equal(hits, before, 'no request reached the server');
    } finally {
      restoreDns();
    }
  });

  it('refuses an override that points at a private address other than loopback', async () => {
    const d = egress({ resolve: ['inside.test=10.0.0.1:80'] });
    await assert.rejects(get(d, 'http://inside.test/'), /non-public/);
  });

  it('reaches loopback unguarded only when asked to (this server’s own endpoints)', async () => {
    assert.equal((await get(egress({ guard: false }), `http://127.0.0.1:${port}/`)).status, 200);
  });

  it('fails a response over maxResponseBytes', async () => {
    const d = egress({ resolve: [`fixture.test=127.0.0.1:${port}`], maxResponseBytes: 1024 });
    await assert.rejects(get(d, 'http://fixture.test/big'), errors.ResponseExceededMaxSizeError);
    assert.equal((await get(d, 'http://fixture.test/')).status, 200);
  });

  it('gives up on headers that take longer than headersTimeoutMs', async () => {
    const d = egress({ resolve: [`fixture.test=127.0.0.1:${port}`], headersTimeoutMs: 200 });
    await assert.rejects(get(d, 'http://fixture.test/slow'), errors.HeadersTimeoutError);
  });

  it('aborts a request waiting for headers through a RequestAbort, as RequestAbortedError', async () => {
    const d = egress({ resolve: [`fixture.test=127.0.0.1:${port}`] });
    const ac = new RequestAbort();
    const pending = d.request({ origin: 'http://fixture.test', path: '/slow', method: 'GET', signal: ac });
    setTimeout(() => ac.abort(), 100);
    // Not aborted, the request would answer 200 "late".
    await assert.rejects(pending, errors.RequestAbortedError);
    assert.equal(ac.listenerCount('abort'), 0, 'undici let go of the handle');
  });

  it('parses overrides like curl --resolve', () => {
    const r = parseResolve(['GitHub.com=127.0.0.1:8443', 'pypi.org=[::1]:9443', 'junk']);
    assert.deepEqual(r.get('github.com'), { address: '127.0.0.1', port: 8443 });
    assert.deepEqual(r.get('pypi.org'), { address: '::1', port: 9443 });
    assert.equal(r.size, 2);
  });
});

describe('failed name lookups (negative cache)', () => {
  /** A resolver that counts its lookups and answers `answer` (an error code, or addresses). */
  function counting(answer: string | dns.LookupAddress[]) {
    const calls: string[] = [];
    const lookup: AddressLookup = (host, _o, cb) => {
      calls.push(host);
      setTimeout(() => {
        if (typeof answer === 'string')
          cb(Object.assign(new Error(`getaddrinfo ${answer} ${host}`), { code: answer }), []);
        else cb(null, answer);
      }, 20);
    };
    return { lookup, calls };
  }
  const ask = (l: ReturnType<typeof createGuardedLookup>, host: string) =>
    new Promise<{ err: NodeJS.ErrnoException | null; addr: unknown }>((resolve) =>
      l(host, { all: true }, (err, addr) => resolve({ err, addr })),
    );

  for (const code of ['ENOTFOUND', 'EAI_AGAIN'])
    it(`remembers ${code} for its time-to-live: later and parallel askers fail without a lookup`, async () => {
      let t = 1_000_000;
      const r = counting(code);
      const l = createGuardedLookup({ lookup: r.lookup, negativeTtlMs: 5000, now: () => t });
      const first = await Promise.all([1, 2, 3].map(() => ask(l, 'offline.test')));
      for (let i = 0; i < 5; i++) first.push(await ask(l, 'OFFLINE.test'));
      for (const g of first) assert.equal(g.err?.code, code);
      assert.deepEqual(r.calls, ['offline.test'], 'one lookup for 8 askers');
      t += 5001;
      assert.equal((await ask(l, 'offline.test')).err?.code, code);
      assert.equal(r.calls.length, 2, 'asked again once the time-to-live passed');
    });

  it('does not remember answers, other names, or failures when the time-to-live is 0', async () => {
    const ok = counting([{ address: '140.82.112.3', family: 4 }]);
    const l = createGuardedLookup({ lookup: ok.lookup, negativeTtlMs: 5000 });
    assert.equal((await ask(l, 'public.test')).err, null);
    assert.equal((await ask(l, 'public.test')).err, null);
    assert.equal(ok.calls.length, 2);
    const off = counting('ENOTFOUND');
    const l0 = createGuardedLookup({ lookup: off.lookup, negativeTtlMs: 0 });
    await ask(l0, 'a.test');
    await ask(l0, 'a.test');
    assert.equal(off.calls.length, 2);
  });

  it('makes N requests through the egress to a name that does not resolve cost one lookup', async () => {
    const r = counting('ENOTFOUND');
    const d = createEgress({ timeoutMs: 5000, lookup: r.lookup });
    try {
      for (let i = 0; i < 6; i++) {
        const hash = i.toString(16).padStart(32, '0');
        await assert.rejects(
          d.request({ origin: 'http://avatars.offline.test', path: `/avatar/${hash}`, method: 'GET' }),
          (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND',
        );
      }
    } finally {
      await d.close();
    }
    assert.deepEqual(r.calls, ['avatars.offline.test']);
  });

  it("takes the time-to-live from each egress's policy: two servers' settings in one process both hold", async () => {
    const fails = async (policy: { dnsNegativeTtlMs?: number }) => {
      const r = counting('ENOTFOUND');
      const d = createEgress({
        timeoutMs: 5000,
        lookup: r.lookup,
        policy: { proxy: '', noProxy: [], allowCidrs: [], ...policy },
      });
      try {
        for (let i = 0; i < 3; i++)
          await assert.rejects(
            d.request({ origin: 'http://gone.offline.test', path: '/', method: 'GET' }),
            (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND',
          );
      } finally {
        await d.close();
      }
      return r.calls.length;
    };
    assert.equal(await fails({ dnsNegativeTtlMs: 0 }), 3, 'a server with 0 looks up every time');
    assert.equal(await fails({}), 1, 'another with the default remembers the failure');
    assert.equal(await fails({ dnsNegativeTtlMs: 0 }), 3, 'and the first one still looks up every time');
  });
});

import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { addressGroup, trustList } from '../http/client-ip.ts';
import { Metrics } from '../observe/metrics.ts';
import {
  ConnectionBudget,
  connectionMetrics,
  derivedTotal,
  FALLBACK_FD_LIMIT,
  fdLimit,
} from './conn-budget.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            600                  600                  files
Max locked memory         8388608              8388608              bytes
`;

describe('fd limit and the derived total', () => {
  it('reads the soft open-files limit from /proc/self/limits', () => {
    assert.equal(
      fdLimit(() => LIMITS),
      600,
    );
    assert.equal(
      fdLimit(() => LIMITS.replace('600                  600', 'unlimited            unlimited')),
      1_048_576,
    );
  });
  it('falls back to 1024 when the file is missing or unreadable', () => {
    assert.equal(
      fdLimit(() => {
        throw new Error('ENOENT');
      }),
      FALLBACK_FD_LIMIT,
    );
    assert.equal(
      fdLimit(() => 'no such line'),
      FALLBACK_FD_LIMIT,
    );
    assert.equal(
      fdLimit(() => 'Max open files            0     0    files\n'),
      FALLBACK_FD_LIMIT,
    );
  });
  it('reads a real limit on this machine', () => {
    assert.ok(fdLimit() > 0);
  });
  it('keeps the total well below the limit: 320 for 1024 fds, 178 for 600, never below 16', () => {
    assert.equal(derivedTotal(1024), 320);
    assert.equal(derivedTotal(600), 178);
    assert.equal(derivedTotal(64), 16);
  });
});

describe('address groups', () => {
  const table: [string | undefined, string][] = [
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002:ffff::9', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['::1', '::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    [undefined, 'unknown'],
    ['garbage', 'unknown'],
  ];
  for (const [peer, want] of table) {
    it(`counts ${peer} in ${want}`, () => assert.equal(addressGroup(peer), want));
  }
});

/** A socket as far as admit() looks at it: a peer address, destroy(), and 'close'. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  readonly remoteAddress: string;
  constructor(remoteAddress: string) {
    super();
    this.remoteAddress = remoteAddress;
  }
  destroy(): void {
    this.destroyed = true;
  }
  end(): void {
    this.emit('close');
  }
}
const fake = (peer: string) => new FakeSocket(peer);
const admit = (b: ConnectionBudget, s: FakeSocket, l = 'http') => b.admit(s as unknown as Socket, l);

describe('ConnectionBudget', () => {
  it('holds one address to its share and lets others in', () => {
    const b = new ConnectionBudget({ total: 100, perClient: 3 });
    const held = [1, 2, 3].map(() => fake('198.51.100.9'));
    for (const s of held) assert.equal(admit(b, s), true);
    const extra = fake('198.51.100.9');
    assert.equal(admit(b, extra), false);
    assert.equal(extra.destroyed, true);
    assert.equal(admit(b, fake('198.51.100.10')), true);
    assert.equal(b.heldBy('198.51.100.9'), 3);
    // A closed connection frees its share.
    held[0]?.end();
    assert.equal(admit(b, fake('198.51.100.9')), true);
    assert.deepEqual([...b.refusals()], [[['http', 'client'], 1]]);
  });

  it('counts every address of one IPv6 /64 as one client, and the next /64 apart', () => {
    const b = new ConnectionBudget({ total: 100, perClient: 2 });
    assert.equal(admit(b, fake('2001:db8:1:2::1')), true);
    assert.equal(admit(b, fake('2001:db8:1:2:ffff:ffff:ffff:ffff')), true);
    assert.equal(admit(b, fake('2001:db8:1:2:1234::5')), false);
    assert.equal(admit(b, fake('2001:db8:1:3::1')), true);
    assert.equal(b.heldBy('2001:db8:1:2::abcd'), 2);
  });

  it('refuses everyone once the total is reached, across listeners, until a connection closes', () => {
    const b = new ConnectionBudget({ total: 3, perClient: 0 });
    const a = fake('192.0.2.1');
    assert.equal(admit(b, a, 'http'), true);
    assert.equal(admit(b, fake('192.0.2.2'), 'relay'), true);
    assert.equal(admit(b, fake('192.0.2.3'), 'relay'), true);
    assert.equal(admit(b, fake('192.0.2.4'), 'http'), false);
    assert.equal(admit(b, fake('192.0.2.5'), 'relay'), false);
    assert.deepEqual([b.openCount(), b.openCount('http'), b.openCount('relay')], [3, 1, 2]);
    a.end();
    assert.equal(admit(b, fake('192.0.2.4'), 'http'), true);
    assert.deepEqual(
      new Map([...b.refusals()].map(([[l, r], n]) => [`${l}/${r}`, n])),
      new Map([
        ['http/total', 1],
        ['relay/total', 1],
      ]),
    );
  });

  it('holds trusted proxies to the total only (their sockets carry many clients)', () => {
    const b = new ConnectionBudget({ total: 5, perClient: 1, exempt: trustList(['10.0.0.0/8']) });
    for (let i = 0; i < 4; i++) assert.equal(admit(b, fake('10.1.2.3')), true);
    assert.equal(admit(b, fake('::ffff:10.1.2.3')), true);
    assert.equal(admit(b, fake('10.1.2.3')), false);
    const r = [...b.refusals()];
    assert.deepEqual(r, [[['http', 'total'], 1]]);
  });
});

/** Sends a request on a fresh connection from `from`: 'served' if an answer comes, 'closed' if not. */
function probe(port: number, from: string, keep: Socket[]): Promise<'served' | 'closed'> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1', localAddress: from });
    keep.push(s);
    s.on('error', () => {});
    s.once('connect', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.once('data', () => resolve('served'));
    s.once('close', () => resolve('closed'));
  });
}

describe('ConnectionBudget in front of an HTTP server', () => {
  let server: Server;
  let port = 0;
  let requests = 0;
  let budget: ConnectionBudget;
  const metrics = new Metrics({ processMetrics: false });
  const sockets: Socket[] = [];
  before(async () => {
    server = createServer((_req, res) => {
      requests++;
      res.end('ok');
    });
    budget = new ConnectionBudget({ total: 6, perClient: 2 });
    budget.guard(server, 'http');
    connectionMetrics(metrics, budget, ['http', 'relay']);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    port = typeof a === 'object' && a ? a.port : 0;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('closes a client over its share before HTTP sees the request, while another address is served', async () => {
    assert.equal(await probe(port, '127.0.0.2', sockets), 'served');
    assert.equal(await probe(port, '127.0.0.2', sockets), 'served');
    const before = requests;
    assert.equal(await probe(port, '127.0.0.2', sockets), 'closed');
    assert.equal(requests, before, 'the refused request must never reach the HTTP parser');
    assert.equal(await probe(port, '127.0.0.1', sockets), 'served');
    const text = await metrics.registry.metrics();
    assert.match(text, /devutil_connections_refused_total\{listener="http",reason="client"\} 1/);
    assert.match(text, /devutil_connections_open\{listener="http"\} 3/);
    assert.match(text, /devutil_connections_limit\{scope="total"\} 6/);
  });

  it('lets the client in again once one of its connections closes', async () => {
    sockets[0]?.destroy();
    for (let i = 0; i < 50 && budget.heldBy('127.0.0.2') > 1; i++)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(await probe(port, '127.0.0.2', sockets), 'served');
  });
});

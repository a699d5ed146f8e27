import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalIp, clientIp, trustList } from './client-ip.ts';

const xff = (v: string | string[]) => ({ 'x-forwarded-for': v });

describe('canonicalIp', () => {
  const table: [string, string | null][] = [
    ['1.2.3.4', '1.2.3.4'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:7f00:1', '127.0.0.1'],
    ['::FFFF:10.1.2.3', '10.1.2.3'],
    ['::ffff:999.1.1.1', null],
    ['::1.2.3.4', '::102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    ['fe80::', 'fe80::'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['1::2::3', null],
    ['12345::1', null],
    ['1:2:3:4:5:6:7:8:9', null],
    ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['1.2.3', null],
    ['1.2.3.4.5', null],
    ['999.1.1.1', null],
    ['', null],
    ['unknown', null],
    ['::g', null],
    ['１.２.３.４', null],
  ];
  for (const [input, want] of table) {
    it(`canonicalises ${JSON.stringify(input)} to ${want}`, () => assert.equal(canonicalIp(input), want));
  }
});

describe('clientIp', () => {
  const loopback = { trusted: trustList(['loopback']), header: 'x-forwarded-for' as const };
  const none = { trusted: trustList([]), header: 'x-forwarded-for' as const };

  it('ignores X-Forwarded-For from an untrusted peer', () => {
    assert.equal(clientIp('203.0.113.9', xff('1.2.3.4'), loopback), '203.0.113.9');
    assert.equal(clientIp('127.0.0.1', xff('1.2.3.4'), none), '127.0.0.1');
  });
  it('believes X-Forwarded-For from a trusted peer', () => {
    assert.equal(clientIp('127.0.0.1', xff('1.2.3.4'), loopback), '1.2.3.4');
  });
  it('walks right to left and stops at the first untrusted hop (leftmost is spoofable)', () => {
    const opts = { trusted: trustList(['127.0.0.1', '10.0.0.0/8']), header: 'x-forwarded-for' as const };
    assert.equal(clientIp('127.0.0.1', xff('6.6.6.6, 198.51.100.7, 10.1.2.3'), opts), '198.51.100.7');
    assert.equal(clientIp('127.0.0.1', xff(['6.6.6.6', '198.51.100.7,10.1.2.3']), opts), '198.51.100.7');
  });
  it('reports IPv4-mapped peers as IPv4', () => {
    assert.equal(clientIp('::ffff:127.0.0.1', {}, none), '127.0.0.1');
    assert.equal(clientIp('::ffff:127.0.0.1', xff('9.9.9.9'), loopback), '9.9.9.9');
  });
  it('never lets a malformed entry win over the socket address', () => {
    for (const bad of ['', 'garbage', '1.2.3.4\r\nX: y', '999.0.0.1', ',,,', 'a'.repeat(10_000)]) {
      assert.equal(clientIp('127.0.0.1', xff(bad), loopback), '127.0.0.1', JSON.stringify(bad.slice(0, 20)));
    }
  });
  it('accepts ports and brackets in entries', () => {
    assert.equal(clientIp('127.0.0.1', xff('1.2.3.4:5678'), loopback), '1.2.3.4');
    assert.equal(clientIp('127.0.0.1', xff('[2001:db8::1]:443'), loopback), '2001:db8::1');
  });
  it('reads RFC 7239 Forwarded when configured', () => {
    const fwd = { trusted: trustList(['loopback']), header: 'forwarded' as const };
    const h = { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"' };
    assert.equal(clientIp('127.0.0.1', h, fwd), '2001:db8:cafe::17');
    assert.equal(clientIp('127.0.0.1', { forwarded: 'for=_hidden' }, fwd), '127.0.0.1');
    assert.equal(clientIp('127.0.0.1', xff('1.2.3.4'), fwd), '127.0.0.1');
  });
  it('canonicalises IPv6 peers', () => {
    assert.equal(clientIp('2001:DB8:0:0:0:0:0:1', {}, none), '2001:db8::1');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from './address.ts';

describe('?ip= address parsing', { timeout: 10_000 }, () => {
  const good: [string, string][] = [
    ['8.8.8.8', '8.8.8.8'],
    [' 1.1.1.1 ', '1.1.1.1'],
    ['2001:4860:4860::8888', '2001:4860:4860::8888'],
    ['2001:4860:4860:0000:0000:0000:0000:8888', '2001:4860:4860::8888'],
    ['2001:DB8::1', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::', '::'],
  ];
  for (const [raw, ip] of good)
    it(`reads ${JSON.stringify(raw)} as ${ip}`, () => assert.deepEqual(parseAddress(raw), { ok: true, ip }));

  const bad: [string, RegExp][] = [
    ['', /empty/],
    ['example.com', /not an IPv4 or IPv6/],
    ['1.2.3', /not an IPv4 or IPv6/],
    ['010.0.0.1', /not an IPv4 or IPv6/],
    ['0x7f.0.0.1', /not an IPv4 or IPv6/],
    ['256.1.1.1', /not an IPv4 or IPv6/],
    ['1.2.3.4/24', /not an IPv4 or IPv6/],
    ['fe80::1%eth0', /zone id/],
    ['1.2.3.4\r\nx: y', /not an IPv4 or IPv6/],
    ['１.２.３.４', /not an IPv4 or IPv6/],
    ['1'.repeat(65), /longer than 64/],
  ];
  for (const [raw, reason] of bad)
    it(`refuses ${JSON.stringify(raw.slice(0, 20))}`, () => {
      const r = parseAddress(raw);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.reason, reason);
    });
});

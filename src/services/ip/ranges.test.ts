import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { ipv4ToNumber, ipv6ToBigInt, RangeTable, splitCsv } from './ranges.ts';

function csv(text: string): string {
  const path = join(tempDir('devutil-ranges-'), 'db.csv');
  writeFileSync(path, text);
  return path;
}

describe('ip-range CSV tables', () => {
  it('parses dotted quads strictly', () => {
    assert.equal(ipv4ToNumber('0.0.0.0'), 0);
    assert.equal(ipv4ToNumber('8.8.8.8'), 0x08080808);
    assert.equal(ipv4ToNumber('255.255.255.255'), 0xffffffff);
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.4.',
      '1.2.3.256',
      '01.2.3.4',
      '1..3.4',
      '1.2.3.4 ',
      'a.b.c.d',
      '1234.1.1.1',
    ])
      assert.equal(ipv4ToNumber(bad), null, bad);
    assert.equal(ipv6ToBigInt('::'), 0n);
    assert.equal(ipv6ToBigInt('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), (1n << 128n) - 1n);
    assert.equal(ipv6ToBigInt('2001:DB8::1'), 0x20010db8000000000000000000000001n);
    assert.equal(ipv6ToBigInt('2001:db8::g'), null);
  });

  it('splits quoted CSV values', () => {
    assert.deepEqual(splitCsv('15169,Google LLC'), ['15169', 'Google LLC']);
    assert.deepEqual(splitCsv('3356,"Level 3, Inc."'), ['3356', 'Level 3, Inc.']);
    assert.deepEqual(splitCsv('1,"say ""hi""",x'), ['1', 'say "hi"', 'x']);
    assert.deepEqual(splitCsv('1,'), ['1', '']);
    assert.deepEqual(splitCsv('1,"open'), ['1', 'open']);
  });

  it('finds a range by its inclusive bounds, IPv4 and IPv6 in one file, CRLF or not', async () => {
    const t = await RangeTable.load(
      csv(
        '1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."\r\n' +
          '1.0.4.0,1.0.7.255,38803,Gtelecom\n' +
          'ffff::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,65000,Top\n' +
          '2001:200::,2001:200:ffff:ffff:ffff:ffff:ffff:ffff,2500,WIDE\n',
      ),
    );
    assert.equal(t.rows, 4);
    assert.deepEqual(t.get('1.0.0.0'), ['13335', 'Cloudflare, Inc.']);
    assert.deepEqual(t.get('1.0.0.255'), ['13335', 'Cloudflare, Inc.']);
    assert.equal(t.get('1.0.1.0'), null);
    assert.equal(t.get('0.255.255.255'), null);
    assert.deepEqual(t.get('1.0.7.255'), ['38803', 'Gtelecom']);
    assert.deepEqual(t.get('2001:200::1'), ['2500', 'WIDE']);
    assert.deepEqual(t.get('2001:200:ffff:ffff:ffff:ffff:ffff:ffff'), ['2500', 'WIDE']);
    assert.equal(t.get('2001:201::'), null);
    assert.deepEqual(t.get('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), ['65000', 'Top']);
    assert.equal(t.get('not an address'), null);
  });

  it('sorts an unsorted file and clips overlapping rows (the earlier start keeps its range)', async () => {
    const t = await RangeTable.load(
      csv(
        [
          '10.0.2.0,10.0.2.255,3,C', // out of order
          '10.0.0.0,10.0.1.127,1,A',
          '10.0.1.0,10.0.1.255,2,B', // overlaps A: only 10.0.1.128-255 stays B
          '10.0.1.10,10.0.1.20,9,Nested', // inside A: dropped
        ].join('\n'),
      ),
    );
    assert.equal(t.clipped, 2);
    assert.deepEqual(t.get('10.0.1.100'), ['1', 'A']);
    assert.deepEqual(t.get('10.0.1.15'), ['1', 'A']);
    assert.deepEqual(t.get('10.0.1.200'), ['2', 'B']);
    assert.deepEqual(t.get('10.0.2.9'), ['3', 'C']);
  });

  it('skips and counts malformed rows, and refuses a file without any range', async () => {
    const t = await RangeTable.load(
      csv(
        'ip_range_start,ip_range_end,asn,org\n' +
          '1.2.3.4,1.2.3.0,1,backwards\n' +
          '1.2.3.0,::1,1,mixed\n' +
          '300.1.1.1,300.1.1.2,1,bad\n' +
          'garbage\n' +
          '\n' +
          '5.5.5.0,5.5.5.255,64496,Good\n',
      ),
    );
    assert.equal(t.rows, 1);
    assert.equal(t.skipped, 5);
    assert.deepEqual(t.get('5.5.5.5'), ['64496', 'Good']);
    await assert.rejects(RangeTable.load(csv('a,b,c\n\n')), /no address ranges/);
    await assert.rejects(RangeTable.load(csv('')), /no address ranges/);
  });
});

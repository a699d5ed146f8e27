import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { expandV6 } from '../../infra/http/client-ip.ts';
import { parseV4, parseV6 } from './range-bytes.ts';
import { RangeTable, splitCsv } from './ranges.ts';

function csv(text: string | Buffer): string {
  const path = join(tempDir('devutil-ranges-'), 'db.csv');
  writeFileSync(path, text);
  return path;
}

const ipv4ToNumber = (ip: string) => {
  const n = parseV4(Buffer.from(ip), 0, Buffer.byteLength(ip));
  return n === -1 ? null : n;
};
const ipv6ToBigInt = (ip: string) => {
  const w = new Uint32Array(4);
  if (!parseV6(Buffer.from(ip), 0, Buffer.byteLength(ip), w)) return null;
  return w.reduce((n, x) => (n << 32n) | BigInt(x), 0n);
};
/** The string parse the byte parser replaced (isIPv6, then expandV6 on the lower-cased text). */
const oldV6 = (ip: string) => {
  const g = isIPv6(ip) ? expandV6(ip.toLowerCase()) : null;
  return g ? g.reduce((n, x) => (n << 16n) | BigInt(x), 0n) : null;
};

describe('ip-range CSV tables', { timeout: 60_000 }, () => {
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

  it('parses IPv6 from bytes as isIPv6 + expandV6 did: compressed, mapped, either case, malformed', () => {
    const cases = [
      ['::', 0n],
      ['::1', 1n],
      ['1::', 1n << 112n],
      ['::ffff:1.2.3.4', 0xffff01020304n],
      ['::FFFF:1.2.3.4', 0xffff01020304n],
      ['::1.2.3.4', 0x01020304n],
      ['1:2:3:4:5:6:1.2.3.4', 0x00010002000300040005000601020304n],
      ['1:2:3:4:5::1.2.3.4', 0x00010002000300040005000001020304n],
      ['1:2:3:4:5:6:7::', 0x00010002000300040005000600070000n],
      ['::2:3:4:5:6:7:8', 0x00000002000300040005000600070008n],
      ['ABCD:EF01::Ff', 0xabcdef010000000000000000000000ffn],
      ['0000:0000::0001', 1n],
      ['ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255', (1n << 128n) - 1n],
    ] as const;
    for (const [ip, n] of cases) {
      assert.equal(ipv6ToBigInt(ip), n, ip);
      assert.equal(oldV6(ip), n, ip);
    }
    for (const bad of [
      '',
      ':',
      ':::',
      '1::2::3',
      ':1::',
      '1::2:',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7:8::',
      '1:2:3:4:5:6::1.2.3.4',
      '12345::',
      '::01.2.3.4',
      '::1.2.3.04',
      '::1.2.3',
      '::256.1.1.1',
      'fe80::1%eth0',
      ' ::1',
      '::1 ',
      '1:2:3:4:5:6:7',
      'g::',
      '::1.2.3.4:5',
    ]) {
      assert.equal(ipv6ToBigInt(bad), null, bad);
      assert.equal(oldV6(bad), null, bad);
    }
    // And on random addresses, compressed or not, with a dotted tail or not, some with one
    // character changed: valid and nearly valid forms alike.
    let seed = 35;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const chars = '0123456789abcdefABCDEF:.';
    let valid = 0;
    for (let t = 0; t < 20_000; t++) {
      const tail = rand(4) === 0;
      const groups = Array.from({ length: tail ? 6 : 8 }, () =>
        rand(3) === 0
          ? '0'
          : rand(0x10000)
              .toString(16)
              .slice(0, 1 + rand(4)),
      );
      if (rand(2)) groups[0] = groups[0]!.toUpperCase();
      if (tail) groups.push([0, 0, 0, 0].map(() => rand(256)).join('.'));
      let ip = groups.join(':');
      if (rand(2)) {
        const at = rand(groups.length);
        const len = 1 + rand(groups.length - at);
        ip = `${groups.slice(0, at).join(':')}::${groups.slice(at + len).join(':')}`;
      }
      if (rand(3) === 0) {
        const at = rand(ip.length + 1);
        ip = ip.slice(0, at) + chars[rand(chars.length)] + ip.slice(at + rand(2));
      }
      const want = oldV6(ip);
      if (want !== null) valid++;
      assert.equal(ipv6ToBigInt(ip), want, ip);
    }
    assert.ok(valid > 5_000 && valid < 19_000, `${valid} of the random forms valid`);
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

  it('reads IPv6 in any form, CRLF, blank lines, UTF-8 values and repeated values as before', async () => {
    const t = await RangeTable.load(
      csv(
        [
          '::,::ff,1,"Zero, Inc."',
          '::ffff:1.2.3.0,::FFFF:1.2.3.255,2,Mapped',
          'ABCD:EF01::,abcd:ef01::ffff,3,Upper',
          '',
          ' \t\r',
          '1.0.0.0,1.0.0.255,4,Müller AG',
          '1.0.1.0,1.0.1.255,5,Other',
          '1.0.2.0,1.0.2.255,4,Müller AG',
          '1.0.3.0,1.0.3.255,6,',
          '',
        ].join('\r\n'),
      ),
    );
    assert.equal(t.rows, 7);
    assert.equal(t.skipped, 0);
    assert.deepEqual(t.get('::7f'), ['1', 'Zero, Inc.']);
    assert.equal(t.get('::100'), null);
    assert.deepEqual(t.get('::ffff:102:380'), ['2', 'Mapped']);
    assert.deepEqual(t.get('::ffff:1.2.3.128'), ['2', 'Mapped']);
    assert.deepEqual(t.get('ABCD:EF01::1234'), ['3', 'Upper']);
    assert.deepEqual(t.get('1.0.0.7'), ['4', 'Müller AG']);
    assert.deepEqual(t.get('1.0.2.7'), ['4', 'Müller AG']);
    assert.deepEqual(t.get('1.0.1.7'), ['5', 'Other']);
    assert.deepEqual(t.get('1.0.3.7'), ['6', '']);
    assert.equal(t.get('1.0.4.0'), null);
    assert.equal(t.get('１.0.0.7'), null); // a full-width digit is no digit
  });

  it('keeps thousands of rows, values and yields apart, sorted or not', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++)
      lines.push(`10.${i >> 8}.${i & 255}.0,10.${i >> 8}.${i & 255}.255,${i},Org ${i % 3000}`);
    for (let i = 0; i < 5000; i++)
      lines.push(`2001:db8:${i.toString(16)}::,2001:db8:${i.toString(16)}::ffff,${i},V6 ${i}`);
    for (const text of [lines.join('\n'), lines.slice().reverse().join('\n')]) {
      const t = await RangeTable.load(csv(text));
      assert.equal(t.rows, 25_000);
      assert.equal(t.clipped, 0);
      assert.deepEqual(t.get('10.0.0.1'), ['0', 'Org 0']);
      assert.deepEqual(t.get('10.78.31.200'), ['19999', 'Org 1999']);
      assert.deepEqual(t.get('10.11.184.9'), ['3000', 'Org 0']);
      assert.equal(t.get('10.78.32.0'), null);
      assert.deepEqual(t.get('2001:db8:1387::abc'), ['4999', 'V6 4999']);
      assert.equal(t.get('2001:db8:1387::1:0'), null);
    }
  });

  it('reads the same table whatever the read size: lines and CRLF split across reads', async () => {
    const text = [
      'start,end,asn,org',
      '1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."',
      '1.0.4.0,1.0.7.255,38803,Gtelecom',
      'bad row',
      '::ffff:1.2.3.0,::FFFF:1.2.3.255,2,Mapped',
      `2001:200::,2001:200:ffff:ffff:ffff:ffff:ffff:ffff,2500,${'W'.repeat(300)}`,
      '1.0.5.0,1.0.9.255,9,Overlap',
      '',
      '5.5.5.0,5.5.5.255,64496,Last without a line end',
    ].join('\r\n');
    const ips = ['1.0.0.9', '1.0.5.1', '1.0.9.1', '::ffff:1.2.3.9', '2001:200::1', '5.5.5.5', '9.9.9.9'];
    const path = csv(text);
    const want = await RangeTable.load(path);
    assert.deepEqual([want.rows, want.skipped, want.clipped], [6, 2, 1]);
    assert.deepEqual(want.get('5.5.5.5'), ['64496', 'Last without a line end']);
    for (const chunk of [1, 2, 7, 64, 301]) {
      const t = await RangeTable.load(path, chunk);
      assert.deepEqual(
        [t.rows, t.skipped, t.clipped],
        [want.rows, want.skipped, want.clipped],
        `chunk ${chunk}`,
      );
      for (const ip of ips) assert.deepEqual(t.get(ip), want.get(ip), `${ip}, chunk ${chunk}`);
    }
  });

  it('clips an IPv6 row to start just after the one before, carrying across words', async () => {
    const t = await RangeTable.load(
      csv(
        '::,::ffff:ffff,1,A\n::ff00:0,::1:0:ffff,2,B\n2001::,2001::ffff:ffff:ffff:ffff,3,C\n2001::1,2001::2,4,D\n',
      ),
    );
    assert.equal(t.clipped, 2);
    assert.equal(t.rows, 3);
    assert.deepEqual(t.get('::ffff:ffff'), ['1', 'A']);
    assert.deepEqual(t.get('::1:0:0'), ['2', 'B']);
    assert.deepEqual(t.get('2001::2'), ['3', 'C']);
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
        Buffer.from(
          'ip_range_start,ip_range_end,asn,org\n' +
            '1.2.3.4,1.2.3.0,1,backwards\n' +
            '1.2.3.0,::1,1,mixed\n' +
            '300.1.1.1,300.1.1.2,1,bad\n' +
            'garbage\n' +
            '\n' +
            '\xa0\t\n' +
            '1.2.3.4\n' +
            ',1.2.3.4,1,leading comma\n' +
            '5.5.5.0,5.5.5.255,64496,Good\n',
          'latin1', // the NBSP as one byte: blank, as String#trim saw it
        ),
      ),
    );
    assert.equal(t.rows, 1);
    assert.equal(t.skipped, 7);
    assert.deepEqual(t.get('5.5.5.5'), ['64496', 'Good']);
    await assert.rejects(RangeTable.load(csv('a,b,c\n\n')), /no address ranges/);
    await assert.rejects(RangeTable.load(csv('')), /no address ranges/);
  });
});

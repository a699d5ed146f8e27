// Device ID text form (docs/protocols/syncthing-relay.md §1): the worked example, the upstream vector and
// the parser's leniency.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDeviceId, luhn32, parseDeviceId } from './device-id.ts';

const seq = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const SEQ_ID = 'AAAQEAY-EAUDAOB-CAJBIFQ-YDIOB4B-IBCEQTC-QKRMFYX-YDENBWH-A5DYPQG';
const UPSTREAM = 'P56IOI7-MZJNU2Y-IQGDREY-DM2MGTI-MGL3BXN-PQ6W5BM-TBBZ4TJ-XZWICQ2';

describe('device IDs', () => {
  it('computes the luhn32 check character of the worked example', () => {
    assert.equal(luhn32('AAAQEAYEAUDAO'), 'B');
  });

  it('formats bytes 00..1f as docs/protocols/syncthing-relay.md §1 shows', () => {
    assert.equal(formatDeviceId(seq), SEQ_ID);
  });

  it('round-trips the upstream test vector', () => {
    const raw = parseDeviceId(UPSTREAM);
    assert.ok(raw);
    assert.equal(raw.length, 32);
    assert.equal(raw.subarray(0, 4).toString('hex'), '7f7c8723');
    assert.equal(raw.subarray(28).toString('hex'), 'a6f9b205');
    assert.equal(formatDeviceId(raw), UPSTREAM);
  });

  it('prints the all-zero ID as the empty string', () => {
    assert.equal(formatDeviceId(Buffer.alloc(32)), '');
  });

  it('parses lower case, spaces, typos (0/1/8) and the 52-char form', () => {
    assert.deepEqual(parseDeviceId(SEQ_ID.toLowerCase().replace(/-/g, ' ')), seq);
    assert.deepEqual(parseDeviceId(SEQ_ID.replace(/O/g, '0')), seq);
    const plain = SEQ_ID.replace(/-/g, '');
    const noCheck = [0, 1, 2, 3].map((i) => plain.slice(i * 14, i * 14 + 13)).join('');
    assert.deepEqual(parseDeviceId(noCheck), seq);
  });

  it('rejects a wrong check character and wrong lengths', () => {
    assert.equal(parseDeviceId(SEQ_ID.replace(/G$/, 'H')), null);
    assert.equal(parseDeviceId('AAAA'), null);
    assert.equal(parseDeviceId(''), null);
  });
});

// The Range table every utility that sends byte ranges answers by (files, proxy cache).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contentRange, parseRange, type RangeAnswer, rangeOf } from './range.ts';

const whole: RangeAnswer = { kind: 'whole' };
const bad: RangeAnswer = { kind: 'unsatisfiable' };
const one = (start: number, end: number): RangeAnswer => ({ kind: 'single', start, end });

describe('byte ranges (RFC 9110 14)', () => {
  const t: [string | undefined, number, RangeAnswer, string?][] = [
    [undefined, 10, whole],
    ['bytes=0-4', 10, one(0, 4)],
    ['bytes=5-', 10, one(5, 9)],
    ['bytes=-3', 10, one(7, 9)],
    ['bytes=-30', 10, one(0, 9), 'a suffix longer than the representation selects all of it'],
    ['bytes=8-100', 10, one(8, 9), 'last-pos past the end is the end'],
    ['bytes=9-9', 10, one(9, 9)],
    ['Bytes = 1-2', 10, one(1, 2), 'the unit is case-insensitive'],
    ['bytes= 1 - 2 ', 10, one(1, 2)],
    ['bytes=10-', 10, bad, 'first-pos at the length'],
    ['bytes=10-20', 10, bad],
    ['bytes=-0', 10, bad, 'a zero suffix selects nothing'],
    ['bytes=99999999999999999999-', 10, bad],
    ['bytes=0-', 0, bad, 'nothing to send of an empty representation'],
    ['bytes=-5', 0, whole, 'a suffix of an empty representation is satisfiable: its (empty) whole'],
    ['bytes=5-3', 10, whole, 'last-pos below first-pos: the field is invalid, ignored (14.1.1, 14.2)'],
    ['bytes=0-1,5-3', 10, whole, 'one invalid range-spec invalidates the field'],
    ['items=0-1', 10, whole, 'another unit is ignored'],
    ['bytes', 10, whole],
    ['bytes=', 10, whole],
    ['bytes=,', 10, whole],
    ['bytes=-', 10, whole],
    ['bytes=1e3-', 10, whole],
    ['bytes=0x1-2', 10, whole],
    ['bytes=+1-2', 10, whole],
    ['bytes=1-2-3', 10, whole],
    [
      'bytes=0-1,3-4',
      10,
      {
        kind: 'multiple',
        ranges: [
          { start: 0, end: 1 },
          { start: 3, end: 4 },
        ],
      },
    ],
    [
      'bytes=3-4,0-1',
      10,
      {
        kind: 'multiple',
        ranges: [
          { start: 0, end: 1 },
          { start: 3, end: 4 },
        ],
      },
    ],
    ['bytes=0-1,2-3', 10, one(0, 3), 'adjacent ranges are merged'],
    [
      'bytes=0-5,2-3,-2',
      10,
      {
        kind: 'multiple',
        ranges: [
          { start: 0, end: 5 },
          { start: 8, end: 9 },
        ],
      },
    ],
    ['bytes=0-1,20-30', 10, one(0, 1), 'an unsatisfiable range-spec among satisfiable ones is dropped'],
    ['bytes=20-30,40-', 10, bad],
    [
      'bytes=0-0,,2-2',
      10,
      {
        kind: 'multiple',
        ranges: [
          { start: 0, end: 0 },
          { start: 2, end: 2 },
        ],
      },
    ],
    [
      `bytes=${Array.from({ length: 20 }, (_, i) => `${i * 3}-${i * 3}`).join(',')}`,
      100,
      whole,
      'many small ranges',
    ],
  ];
  for (const [h, size, want, why] of t) {
    it(`${h} of ${size} bytes: ${want.kind}${why ? ` (${why})` : ''}`, () => {
      assert.deepEqual(parseRange(h, size), want);
    });
  }

  it('applies Range to GET only, and only while If-Range holds', () => {
    const v = { etag: '"e"', lastModified: Date.UTC(2025, 0, 1) };
    assert.deepEqual(rangeOf('GET', { range: 'bytes=0-1' }, v, 10), one(0, 1));
    assert.deepEqual(rangeOf('HEAD', { range: 'bytes=0-1' }, v, 10), whole);
    assert.deepEqual(rangeOf('POST', { range: 'bytes=0-1' }, v, 10), whole);
    assert.deepEqual(rangeOf('GET', { range: 'bytes=0-1', 'if-range': '"e"' }, v, 10), one(0, 1));
    assert.deepEqual(rangeOf('GET', { range: 'bytes=0-1', 'if-range': '"old"' }, v, 10), whole);
    assert.deepEqual(rangeOf('GET', { range: 'bytes=50-', 'if-range': '"old"' }, v, 10), whole);
    assert.deepEqual(rangeOf('GET', { 'if-range': '"old"' }, v, 10), whole);
  });

  it('writes Content-Range for a part and for a 416', () => {
    assert.equal(contentRange({ start: 0, end: 4 }, 10), 'bytes 0-4/10');
    assert.equal(contentRange(null, 10), 'bytes */10');
  });
});

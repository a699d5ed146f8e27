// The conditional-request table every utility answers by (files, avatar, image, PlantUML, proxy
// cache): each row is a request's fields against one representation and the RFC 9110 outcome.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ConditionalHeaders,
  evaluate,
  ifRangeHolds,
  listNames,
  type Precondition,
  parseHttpDate,
  type Validators,
} from './conditional.ts';

const LM = Date.UTC(2025, 6, 1, 10, 0, 0); // Tue, 01 Jul 2025 10:00:00 GMT
const AT = 'Tue, 01 Jul 2025 10:00:00 GMT';
const BEFORE = 'Tue, 01 Jul 2025 09:59:59 GMT';
const AFTER = 'Wed, 02 Jul 2025 10:00:00 GMT';
const rep: Validators = { etag: '"abc"', lastModified: LM + 700 };
const weakRep: Validators = { etag: 'W/"abc"', lastModified: LM };
const bare: Validators = { etag: null, lastModified: null };
const coded: Validators = { etag: '"abc-br"', lastModified: LM, sameAs: ['"abc"'] };

type Row = [string, string, ConditionalHeaders, Validators, Precondition, string?];

const table: Row[] = [
  // No preconditions.
  ['nothing', 'GET', {}, rep, 'pass'],
  // If-None-Match: weak comparison, `*`, lists (13.1.2).
  ['INM same tag', 'GET', { 'if-none-match': '"abc"' }, rep, 'not-modified'],
  ['INM weak form of a strong tag', 'GET', { 'if-none-match': 'W/"abc"' }, rep, 'not-modified'],
  ['INM strong form of a weak tag', 'GET', { 'if-none-match': '"abc"' }, weakRep, 'not-modified'],
  ['INM in a list', 'GET', { 'if-none-match': '"x", "abc" ,"y"' }, rep, 'not-modified'],
  ['INM list without spaces', 'GET', { 'if-none-match': '"x","abc"' }, rep, 'not-modified'],
  ['INM other tag', 'GET', { 'if-none-match': '"abcd"' }, rep, 'pass'],
  ['INM a tag that contains ours', 'GET', { 'if-none-match': '"xx"abc"' }, rep, 'pass'],
  ['INM unquoted', 'GET', { 'if-none-match': 'abc' }, rep, 'pass'],
  ['INM comma inside a tag', 'GET', { 'if-none-match': '"a,b", "abc"' }, rep, 'not-modified'],
  ['INM unterminated', 'GET', { 'if-none-match': '"abc' }, rep, 'pass'],
  ['INM star', 'GET', { 'if-none-match': '*' }, rep, 'not-modified'],
  ['INM star, spaced', 'HEAD', { 'if-none-match': ' * ' }, rep, 'not-modified'],
  ['INM star without an ETag', 'GET', { 'if-none-match': '*' }, bare, 'not-modified'],
  ['INM a tag without an ETag', 'GET', { 'if-none-match': '"abc"' }, bare, 'pass'],
  ['INM on HEAD', 'HEAD', { 'if-none-match': '"abc"' }, rep, 'not-modified'],
  ['INM on DELETE is a failed precondition', 'DELETE', { 'if-none-match': '"abc"' }, rep, 'failed'],
  ['INM names the other coding', 'GET', { 'if-none-match': '"abc"' }, coded, 'not-modified'],
  // If-Modified-Since: GET/HEAD only, ignored under If-None-Match or when not a date (13.1.3).
  ['IMS equal', 'GET', { 'if-modified-since': AT }, rep, 'not-modified', 'compared to the second'],
  ['IMS later', 'GET', { 'if-modified-since': AFTER }, rep, 'not-modified'],
  ['IMS earlier', 'GET', { 'if-modified-since': BEFORE }, rep, 'pass'],
  ['IMS rfc850 form', 'GET', { 'if-modified-since': 'Tuesday, 01-Jul-25 10:00:00 GMT' }, rep, 'not-modified'],
  ['IMS asctime form', 'GET', { 'if-modified-since': 'Tue Jul  1 10:00:00 2025' }, rep, 'not-modified'],
  ['IMS not a date', 'GET', { 'if-modified-since': 'yesterday' }, rep, 'pass'],
  ['IMS a bare number', 'GET', { 'if-modified-since': '2030' }, rep, 'pass', 'Date.parse would say 2030'],
  ['IMS lower-case zone', 'GET', { 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 gmt' }, rep, 'pass'],
  [
    'IMS without Last-Modified',
    'GET',
    { 'if-modified-since': AFTER },
    { etag: '"abc"', lastModified: null },
    'pass',
  ],
  ['IMS under a failing INM', 'GET', { 'if-none-match': '"x"', 'if-modified-since': AFTER }, rep, 'pass'],
  [
    'IMS under a matching INM',
    'GET',
    { 'if-none-match': '"abc"', 'if-modified-since': BEFORE },
    rep,
    'not-modified',
  ],
  ['IMS on POST', 'POST', { 'if-modified-since': AFTER }, rep, 'pass'],
  // If-Match: strong comparison, `*` (13.1.1).
  ['IM same tag', 'GET', { 'if-match': '"abc"' }, rep, 'pass'],
  ['IM in a list', 'PUT', { 'if-match': '"x", "abc"' }, rep, 'pass'],
  ['IM other tag', 'GET', { 'if-match': '"x"' }, rep, 'failed'],
  ['IM weak tag never matches', 'GET', { 'if-match': 'W/"abc"' }, rep, 'failed'],
  ['IM against a weak ETag', 'GET', { 'if-match': '"abc"' }, weakRep, 'failed'],
  ['IM star', 'DELETE', { 'if-match': '*' }, rep, 'pass'],
  ['IM a tag without an ETag', 'GET', { 'if-match': '"abc"' }, bare, 'failed'],
  ['IM decides before INM', 'GET', { 'if-match': '"x"', 'if-none-match': '"abc"' }, rep, 'failed'],
  ['IM passes, then INM', 'GET', { 'if-match': '"abc"', 'if-none-match': '"abc"' }, rep, 'not-modified'],
  // If-Unmodified-Since: only without If-Match (13.1.4).
  ['IUS equal', 'PUT', { 'if-unmodified-since': AT }, rep, 'pass'],
  ['IUS earlier', 'GET', { 'if-unmodified-since': BEFORE }, rep, 'failed'],
  ['IUS not a date', 'GET', { 'if-unmodified-since': 'soon' }, rep, 'pass'],
  ['IUS under a matching IM', 'GET', { 'if-match': '"abc"', 'if-unmodified-since': BEFORE }, rep, 'pass'],
  ['IUS without Last-Modified', 'GET', { 'if-unmodified-since': BEFORE }, bare, 'pass'],
];

describe('conditional requests (RFC 9110 13)', () => {
  for (const [name, method, h, v, want, why] of table) {
    it(`${name}: ${want}${why ? ` (${why})` : ''}`, () => {
      assert.equal(evaluate(method, h, v), want);
    });
  }

  it('leaves If-Match and If-Unmodified-Since to the origin when a cache evaluates', () => {
    assert.equal(evaluate('GET', { 'if-match': '"x"' }, rep, { cache: true }), 'pass');
    assert.equal(evaluate('GET', { 'if-unmodified-since': BEFORE }, rep, { cache: true }), 'pass');
    assert.equal(evaluate('GET', { 'if-none-match': 'W/"abc"' }, rep, { cache: true }), 'not-modified');
  });

  it('compares entity-tag lists strongly or weakly', () => {
    assert.ok(listNames('W/"a"', '"a"', true));
    assert.ok(!listNames('W/"a"', '"a"', false));
    assert.ok(!listNames('"a"', 'W/"a"', false));
    assert.ok(listNames('junk, "a"', '"a"', false), 'a bad member does not hide the next');
    assert.ok(!listNames('', '"a"', true));
  });

  it('reads the three HTTP-date forms and nothing else', () => {
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37));
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37));
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), Date.UTC(1994, 10, 6, 8, 49, 37));
    for (const bad of [
      '',
      '0',
      '1994-11-06T08:49:37Z',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 06 Xyz 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 25:00:00 GMT',
    ])
      assert.equal(parseHttpDate(bad), null, bad);
  });

  it('holds If-Range only for the same strong tag or the exact date', () => {
    const t: [string | undefined, Validators, boolean][] = [
      [undefined, rep, true],
      ['"abc"', rep, true],
      [' "abc" ', rep, true],
      ['"x"', rep, false],
      ['W/"abc"', rep, false],
      ['"abc"', weakRep, false],
      [AT, rep, true],
      [AFTER, rep, false],
      [BEFORE, rep, false],
      ['not a date', rep, false],
      [AT, bare, false],
      ['"abc"', bare, false],
    ];
    for (const [v, r, want] of t) assert.equal(ifRangeHolds(v, r), want, `${v} vs ${r.etag}`);
  });
});

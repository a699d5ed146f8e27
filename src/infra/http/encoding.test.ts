// The Accept-Encoding table every utility that sends coded bodies answers by (files, web assets).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptsEncoding, negotiateEncoding } from './encoding.ts';

describe('Accept-Encoding (RFC 9110 12.5.3)', () => {
  const both = ['br', 'gzip'];
  const t: [string | string[] | undefined, readonly string[], string | null, string?][] = [
    [undefined, both, null, 'no field: identity'],
    ['', both, null, 'an empty field wants no coding'],
    ['gzip, deflate, br', both, 'br', 'equal q: the server order decides'],
    ['gzip, br', both, 'br'],
    ['gzip;q=1, br;q=0.5', both, 'gzip', 'q-values decide first'],
    ['br;q=0.2, gzip;q=0.8', both, 'gzip'],
    ['gzip; q=0.5, br; Q=0.8', both, 'br', 'q is case-insensitive, spaces allowed'],
    ['GZIP', both, 'gzip', 'codings are case-insensitive'],
    ['x-gzip', both, 'gzip', 'x-gzip is gzip (8.4.1.3)'],
    ['X-GZIP;q=0.5, br;q=0.1', both, 'gzip'],
    ['br;q=0', both, null, 'q=0 refuses'],
    ['br;q=0, gzip', both, 'gzip'],
    ['*', both, 'br'],
    ['br;q=0, *', both, 'gzip', '* stands only for codings the field does not name'],
    ['*;q=0', both, null],
    ['*;q=0, gzip', both, 'gzip'],
    ['identity', both, null],
    ['deflate', both, null],
    ['gzip;q=0.001', both, 'gzip'],
    ['gzip;q=abc', both, null, 'a bad q-value is not acceptance'],
    [['gzip;q=0.1', 'br'], both, 'br', 'repeated fields are one list'],
    ['gzip', ['gzip'], 'gzip'],
    ['br', ['gzip'], null],
  ];
  for (const [h, offered, want, why] of t) {
    it(`${JSON.stringify(h)} of ${offered.join('/')}: ${want ?? 'identity'}${why ? ` (${why})` : ''}`, () => {
      assert.equal(negotiateEncoding(h, offered), want);
      // The memo gives the same answer the second time.
      assert.equal(negotiateEncoding(h, offered), want);
    });
  }

  it('says whether one coding is accepted', () => {
    assert.equal(acceptsEncoding('gzip, br', 'br'), true);
    assert.equal(acceptsEncoding('br;q=0', 'br'), false);
    assert.equal(acceptsEncoding('*;q=0, gzip', 'br'), false);
    assert.equal(acceptsEncoding(undefined, 'gzip'), false);
    assert.equal(acceptsEncoding('x-gzip', 'gzip'), true);
  });
});

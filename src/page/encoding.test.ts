// Accept-Encoding negotiation of the page and its assets.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { negotiate } from './encoding.ts';

it('negotiates Accept-Encoding with q-values and wildcards', { timeout: 5000 }, () => {
  assert.equal(negotiate(undefined), null);
  assert.equal(negotiate('identity'), null);
  assert.equal(negotiate('gzip'), 'gzip');
  assert.equal(negotiate('br;q=0, gzip;q=0.5'), 'gzip');
  assert.equal(negotiate('*'), 'br');
  assert.equal(negotiate('*;q=0'), null);
  assert.equal(negotiate('br', ['gzip']), null);
  assert.equal(negotiate('gzip;q=bogus'), null);
});

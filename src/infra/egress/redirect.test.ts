import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type RedirectFault, type RedirectRules, redirectTarget } from './redirect.ts';

class Fault extends Error {
  readonly fault: RedirectFault;
  constructor(fault: RedirectFault) {
    super(fault);
    this.fault = fault;
  }
}
const rules: RedirectRules = {
  max: 2,
  allowed: (u) => u.protocol === 'https:' && u.hostname.endsWith('example.org'),
  fail: (f) => new Fault(f),
};
const from = new URL('https://a.example.org/dir/file?x=1');

describe('redirectTarget', { timeout: 10_000 }, () => {
  const table: [string, number, string | undefined, number, string | RedirectFault | null][] = [
    ['200 is no redirect', 200, 'https://a.example.org/x', 0, null],
    ['304 is no redirect', 304, 'https://a.example.org/x', 0, null],
    ['300 is no redirect', 300, 'https://a.example.org/x', 0, null],
    ['a redirect without Location is answered as it is', 302, undefined, 0, null],
    ['empty Location', 302, '', 0, null],
    ['301 absolute', 301, 'https://b.example.org/y', 0, 'https://b.example.org/y'],
    ['302 relative to the answering URL', 302, 'other', 0, 'https://a.example.org/dir/other'],
    ['303 path-absolute', 303, '/top?q=2', 1, 'https://a.example.org/top?q=2'],
    ['307 scheme-relative', 307, '//c.example.org/z', 0, 'https://c.example.org/z'],
    ['308 keeps the query', 308, '?y=2', 0, 'https://a.example.org/dir/file?y=2'],
    ['a Location that is no URL', 302, 'http://[::1', 0, 'invalid'],
    ['off the list', 302, 'https://evil.test/', 0, 'not-allowed'],
    ['another scheme', 302, 'http://a.example.org/', 0, 'not-allowed'],
    ['one hop too many', 302, 'https://a.example.org/x', 2, 'too-many'],
    ['an off-list target is refused before the hop count', 302, 'https://evil.test/', 5, 'not-allowed'],
  ];
  for (const [name, status, location, followed, want] of table)
    it(name, () => {
      if (want === 'invalid' || want === 'not-allowed' || want === 'too-many') {
        assert.throws(
          () => redirectTarget(status, location, from, followed, rules),
          (e: unknown) => e instanceof Fault && e.fault === want,
        );
      } else {
        const got = redirectTarget(status, location, from, followed, rules);
        assert.equal(got?.href ?? null, want);
      }
    });
});

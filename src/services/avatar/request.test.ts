import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deriveInitials } from './gen/font.ts';
import { allowedRedirect, parseAllowList } from './redirect.ts';
import { parseDefault, parseFile, parseQuery, parseSize, ratingAllows } from './request.ts';
import { emailHashes, parseHash, Seed } from './seed.ts';

const lim = { maxSize: 2048, fallback: 'mp' as const };

describe('avatar request parsing', () => {
  it('hashes the trimmed, lower-cased address like the vectors of docs/protocols/gravatar.md §1', () => {
    const h = emailHashes(' MyEmailAddress@example.com ');
    assert.equal(h.md5, '0bc83cb571cd1c50ba6f3e8a78ef1346');
    assert.equal(h.sha256, '84059b07d4be67b806386c0aad8070a23f18836bbaae342275dc0a83414c32ee');
    assert.equal(emailHashes('george@example.com').md5, '40f8d096a3777232204cb3f796c577b7');
  });

  it('accepts 32/64 hex in any case and nothing else', () => {
    assert.deepEqual(parseHash('0BC83CB571CD1C50BA6F3E8A78EF1346'), {
      hex: '0bc83cb571cd1c50ba6f3e8a78ef1346',
      kind: 'md5',
    });
    assert.equal(
      parseHash('84059b07d4be67b806386c0aad8070a23f18836bbaae342275dc0a83414c32ee')?.kind,
      'sha256',
    );
    for (const bad of [
      '',
      'abc',
      `${'a'.repeat(31)}g`,
      'a'.repeat(33),
      'a'.repeat(63),
      'a'.repeat(65),
      '../etc',
    ]) {
      assert.equal(parseHash(bad), null, bad);
    }
  });

  it('reads the extension as the output format and keeps unknown ones in the hash', () => {
    assert.deepEqual(parseFile('abc.JPG'), { hashText: 'abc', format: 'jpeg' });
    assert.deepEqual(parseFile('abc.jpeg'), { hashText: 'abc', format: 'jpeg' });
    assert.deepEqual(parseFile('abc.webp'), { hashText: 'abc', format: 'webp' });
    assert.deepEqual(parseFile('abc.gif'), { hashText: 'abc', format: 'gif' });
    assert.deepEqual(parseFile('abc'), { hashText: 'abc', format: 'png' });
    assert.deepEqual(parseFile('abc.bmp'), { hashText: 'abc.bmp', format: 'png' });
  });

  it('clamps s like Gravatar: default 80, junk ignored, too large capped', () => {
    const cases: [string | undefined, number][] = [
      [undefined, 80],
      ['96', 96],
      ['1', 1],
      ['0', 80],
      ['-5', 80],
      ['12.5', 80],
      ['abc', 80],
      ['5000', 2048],
      ['99999999999999999999', 80],
      ['2048', 2048],
    ];
    for (const [raw, want] of cases) assert.equal(parseSize(raw, 2048), want, String(raw));
  });

  it('maps d keywords, mm to mp, unknown to the configured default, URLs to url', () => {
    assert.deepEqual(parseDefault('mm', 'mp'), { kind: 'generate', name: 'mp' });
    assert.deepEqual(parseDefault('IDENTICON', 'mp'), { kind: 'generate', name: 'identicon' });
    assert.deepEqual(parseDefault('404', 'mp'), { kind: '404' });
    assert.deepEqual(parseDefault('nonsense', 'retro'), { kind: 'generate', name: 'retro' });
    assert.deepEqual(parseDefault('__proto__', 'mp'), { kind: 'generate', name: 'mp' });
    assert.deepEqual(parseDefault('https://x.test/a.png', 'mp'), {
      kind: 'url',
      url: 'https://x.test/a.png',
    });
  });

  it('lets long names win over short aliases and ignores unknown parameters', () => {
    const q = parseQuery(
      '0bc83cb571cd1c50ba6f3e8a78ef1346',
      'png',
      { s: '20', size: '40', d: 'retro', default: 'wavatar', v: '123', f: 'y', r: 'PG' },
      lim,
    );
    assert.equal(q.size, 40);
    assert.deepEqual(q.default, { kind: 'generate', name: 'wavatar' });
    assert.equal(q.force, true);
    assert.equal(q.rating, 'pg');
    const arr = parseQuery('x', 'png', { s: ['30', '40'], r: 'zz', forcedefault: 'no' }, lim);
    assert.equal(arr.size, 30);
    assert.equal(arr.rating, 'g');
    assert.equal(arr.force, false);
    assert.equal(arr.hash, null);
  });

  it('derives initials from initials= or the first and last word of name=', () => {
    assert.equal(deriveInitials(undefined, 'Jane Q. Doe'), 'JD');
    assert.equal(deriveInitials(undefined, 'élodie'), 'E');
    assert.equal(deriveInitials('ab', 'Jane Doe'), 'AB');
    assert.equal(deriveInitials(undefined, '  '), '');
    assert.equal(deriveInitials(undefined, '王 小明'), '');
  });

  it('orders ratings g < pg < r < x', () => {
    assert.equal(ratingAllows('g', 'g'), true);
    assert.equal(ratingAllows('g', 'pg'), false);
    assert.equal(ratingAllows('x', 'r'), true);
  });

  it('draws the same bytes from the same hash and different ones from another', () => {
    const a = new Seed('0bc83cb571cd1c50ba6f3e8a78ef1346').bytes(64);
    const b = new Seed('0BC83CB571CD1C50BA6F3E8A78EF1346').bytes(64);
    const c = new Seed('40f8d096a3777232204cb3f796c577b7').bytes(64);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
  });
});

describe('d=<url> allow-list', () => {
  const rules = parseAllowList(['https://ui-avatars.com/api/', '.example.org', 'cdn.test/avatars/']);
  const table: [string, string | null][] = [
    ['https://ui-avatars.com/api/?name=x', 'https://ui-avatars.com/api/?name=x'],
    ['http://ui-avatars.com/api/x', null],
    ['https://ui-avatars.com/other', null],
    ['https://ui-avatars.com.evil.com/api/', null],
    ['https://evil.com/https://ui-avatars.com/api/', null],
    ['https://user:pw@ui-avatars.com/api/', null],
    ['https://ui-avatars.com:8443/api/', null],
    ['https://ui-avatars.com/api/%2e%2e/admin', null],
    ['https://ui-avatars.com/api/../admin', null],
    ['https://img.example.org/a.png', 'https://img.example.org/a.png'],
    ['https://example.org/a.png', 'https://example.org/a.png'],
    ['https://badexample.org/a.png', null],
    ['http://cdn.test/avatars/a.jpg', 'http://cdn.test/avatars/a.jpg'],
    ['javascript:alert(1)', null],
    ['https://cdn.test/avatars/a.jpg\r\nSet-Cookie: x=1', 'https://cdn.test/avatars/a.jpgSet-Cookie:%20x=1'],
    ['//cdn.test/avatars/a.jpg', null],
  ];
  for (const [url, want] of table) {
    it(`${want ? 'allows' : 'refuses'} ${JSON.stringify(url).slice(0, 60)}`, () => {
      assert.equal(allowedRedirect(url, rules), want);
    });
  }
  it('refuses everything when the list is empty', () => {
    assert.equal(allowedRedirect('https://ui-avatars.com/api/', []), null);
  });
});

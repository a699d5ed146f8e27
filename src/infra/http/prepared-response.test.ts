import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { etagMatches, PreparedMemo, PreparedResponse } from './prepared-response.ts';

const headers = {
  'content-type': 'image/png',
  etag: '"abc"',
  'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT',
  'x-source': 'test',
};

describe('prepared responses', () => {
  it('compares If-None-Match weakly, with or without *, or exactly', () => {
    assert.ok(etagMatches('"x", W/"abc"', '"abc"'));
    assert.ok(etagMatches(' * ', '"abc"'));
    assert.ok(!etagMatches('*', '"abc"', false));
    assert.ok(!etagMatches('"abcd"', '"abc"'));
    const exact = new PreparedResponse(Buffer.from('x'), { headers, etagMatch: 'exact' });
    assert.ok(exact.notModified({ 'if-none-match': '"abc"' }));
    assert.ok(!exact.notModified({ 'if-none-match': 'W/"abc"' }));
    const list = new PreparedResponse(Buffer.from('x'), { headers, etagMatch: 'list' });
    assert.ok(list.notModified({ 'if-none-match': 'W/"abc"' }));
    assert.ok(!list.notModified({ 'if-none-match': '*' }));
  });

  it('answers If-Modified-Since at second precision, and only without If-None-Match', () => {
    const p = new PreparedResponse(Buffer.from('x'), { headers });
    assert.ok(p.notModified({ 'if-modified-since': 'Tue, 01 Jul 2025 10:00:00 GMT' }));
    assert.ok(p.notModified({ 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 GMT' }));
    assert.ok(!p.notModified({ 'if-modified-since': 'Tue, 01 Jul 2025 09:59:59 GMT' }));
    assert.ok(!p.notModified({ 'if-modified-since': 'not a date' }));
    assert.ok(
      !p.notModified({ 'if-none-match': '"other"', 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 GMT' }),
    );
    const off = new PreparedResponse(Buffer.from('x'), { headers, modifiedSince: false });
    assert.ok(!off.notModified({ 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 GMT' }));
  });

  it('adds Content-Length and leaves the listed headers out of a 304', () => {
    const p = new PreparedResponse(Buffer.from('hello'), {
      headers,
      omitOn304: ['content-type', 'content-length', 'x-source'],
    });
    assert.equal(p.headers['content-length'], '5');
    assert.equal(p.headers['x-source'], 'test');
    assert.deepEqual(p.notModifiedHeaders, { etag: '"abc"', 'last-modified': headers['last-modified'] });
  });

  it('prepares once per body and variant, and anew for a new body', () => {
    const memo = new PreparedMemo();
    const body = Buffer.from('one');
    let built = 0;
    const build = () => {
      built++;
      return { headers };
    };
    const a = memo.get(body, 'v', build);
    assert.equal(memo.get(body, 'v', build), a);
    assert.equal(built, 1);
    assert.notEqual(memo.get(body, 'w', build), a);
    const replaced = memo.get(Buffer.from('one'), 'v', build);
    assert.notEqual(replaced, a);
    assert.equal(built, 3);
  });

  it('keeps a bounded number of variants per body', () => {
    const memo = new PreparedMemo();
    const body = Buffer.from('shared');
    const first = memo.get(body, 'name-0', () => ({ headers }));
    for (let i = 1; i <= 100; i++) memo.get(body, `name-${i}`, () => ({ headers }));
    assert.notEqual(
      memo.get(body, 'name-0', () => ({ headers })),
      first,
      'the oldest variants were dropped',
    );
  });
});

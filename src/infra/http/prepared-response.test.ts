import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { PreparedMemo, PreparedResponse } from './prepared-response.ts';

const headers = {
  'content-type': 'image/png',
  etag: '"abc"',
  'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT',
  'x-source': 'test',
};

describe('prepared responses', () => {
  it('answers by the preconditions of conditional.ts: 200, 304 or 412', () => {
    const p = new PreparedResponse(Buffer.from('x'), { headers });
    const get = (h: Record<string, string>) => p.precondition({ method: 'GET', headers: h });
    assert.equal(get({}), 'pass');
    assert.equal(get({ 'if-none-match': '"x", W/"abc"' }), 'not-modified');
    assert.equal(get({ 'if-none-match': '*' }), 'not-modified');
    assert.equal(get({ 'if-none-match': '"abcd"' }), 'pass');
    assert.equal(get({ 'if-match': '"other"' }), 'failed');
    assert.equal(get({ 'if-modified-since': 'Tue, 01 Jul 2025 10:00:00 GMT' }), 'not-modified');
    assert.equal(get({ 'if-modified-since': 'Tue, 01 Jul 2025 09:59:59 GMT' }), 'pass');
    assert.equal(
      get({ 'if-none-match': '"other"', 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 GMT' }),
      'pass',
    );
    const off = new PreparedResponse(Buffer.from('x'), { headers, modifiedSince: false });
    assert.equal(
      off.precondition({ method: 'GET', headers: { 'if-modified-since': 'Wed, 02 Jul 2025 10:00:00 GMT' } }),
      'pass',
    );
    assert.deepEqual(off.validators, { etag: '"abc"', lastModified: null });
  });

  it('sends the 200, the 304 without the body headers, and an empty 412', async (t) => {
    const app = Fastify();
    t.after(() => app.close());
    const p = new PreparedResponse(Buffer.from('hello'), { headers });
    app.get('/', (req, reply) => p.send(reply, req));
    const ok = await app.inject({ url: '/' });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.body, 'hello');
    assert.equal(ok.headers['content-type'], 'image/png');
    const nm = await app.inject({ url: '/', headers: { 'if-none-match': '"abc"' } });
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.headers['etag'], '"abc"');
    assert.equal(nm.headers['content-type'], undefined);
    const failed = await app.inject({ url: '/', headers: { 'if-match': '"zzz"' } });
    assert.equal(failed.statusCode, 412);
    assert.equal(failed.body, '');
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

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { AppError, badGateway, EnvelopeTable, installErrorHandling, tooMany } from './errors.ts';

async function app() {
  const a = Fastify({ logger: false, bodyLimit: 64 });
  a.decorate('envelopes', new EnvelopeTable());
  installErrorHandling(a);
  a.envelopes.mount('/api/file', 'file');
  a.envelopes.mount('/legacy', 'legacy');
  a.envelopes.mount('/text', 'text');
  a.post('/api/file/:key', async (req) => ({ got: req.body }));
  a.post('/legacy/json', async (req) => ({ got: req.body }));
  a.get('/legacy/boom', async () => {
    throw new Error('secret path /etc/shadow');
  });
  a.get('/legacy/limited', async () => {
    throw tooMany('slow down', 7);
  });
  a.get('/text/upstream', async () => {
    throw badGateway('upstream failed');
  });
  a.get(
    '/v/typed',
    { schema: { querystring: { type: 'object', properties: { n: { type: 'integer' } } } } },
    async () => 'ok',
  );
  await a.ready();
  return a;
}

describe('errors', () => {
  it('renders each family its own envelope', async () => {
    const a = await app();
    const f = await a.inject({
      method: 'POST',
      url: '/api/file/x',
      headers: { 'content-type': 'application/json' },
      payload: '{bad',
    });
    assert.equal(f.statusCode, 400);
    assert.deepEqual(f.json(), { success: false, message: 'malformed JSON body' });
    const l = await a.inject({
      method: 'POST',
      url: '/legacy/json',
      headers: { 'content-type': 'application/json' },
      payload: '{bad',
    });
    assert.deepEqual(l.json(), { status: 0, msg: 'malformed JSON body', data: null });
    const t = await a.inject({ url: '/text/upstream' });
    assert.equal(t.statusCode, 502);
    assert.equal(t.body, 'upstream failed\n');
    const v = await a.inject({ url: '/v/typed?n=abc' });
    assert.equal(v.statusCode, 400);
    assert.equal(v.json().status, 0);
    assert.match(v.json().message, /querystring/);
  });

  it('answers oversized bodies with 413 and unknown content types with 415', async () => {
    const a = await app();
    const big = await a.inject({
      method: 'POST',
      url: '/legacy/json',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ x: 'y'.repeat(200) }),
    });
    assert.equal(big.statusCode, 413);
    assert.equal(big.json().status, 0);
    const odd = await a.inject({
      method: 'POST',
      url: '/legacy/json',
      headers: { 'content-type': 'application/x-odd' },
      payload: 'x',
    });
    assert.equal(odd.statusCode, 415);
    assert.equal(odd.json().msg, 'unsupported content type');
  });

  it('never shows a stack or the message of an unexpected error', async () => {
    const a = await app();
    const r = await a.inject({ url: '/legacy/boom' });
    assert.equal(r.statusCode, 500);
    assert.deepEqual(r.json(), { status: 0, msg: 'internal error', data: null });
    assert.ok(!r.body.includes('shadow'));
  });

  it('carries Retry-After on 429', async () => {
    const a = await app();
    const r = await a.inject({ url: '/legacy/limited' });
    assert.equal(r.statusCode, 429);
    assert.equal(r.headers['retry-after'], '7');
  });

  it('answers 404 and 405 (with Allow) in the family envelope', async () => {
    const a = await app();
    const secret = await a.inject({ url: '/legacy/bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALD/sendMessage' });
    assert.equal(secret.statusCode, 404);
    assert.ok(!secret.body.includes('AAHdq'), 'a token in an unknown path is not echoed back');
    const nf = await a.inject({ url: '/api/file/x/y/z' });
    assert.equal(nf.statusCode, 404);
    assert.equal(nf.json().success, false);
    const na = await a.inject({ method: 'PUT', url: '/api/file/abc' });
    assert.equal(na.statusCode, 405);
    assert.equal(na.headers.allow, 'POST');
  });

  it('keeps AppError fields', () => {
    const e = new AppError('X', 418, 'teapot', { cause: new Error('c'), headers: { a: 1 } });
    assert.equal(e.status, 418);
    assert.deepEqual(e.headers, { a: 1 });
    assert.ok(e.cause instanceof Error);
  });
});

import assert from 'node:assert/strict';
import { get as httpGet } from 'node:http';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { createLogger } from '../observe/logger.ts';
import { ENVELOPES } from './envelopes.ts';
import {
  AppError,
  alreadyLogged,
  badGateway,
  badRequest,
  EnvelopeTable,
  installErrorHandling,
  OnceLogController,
  tooMany,
  unavailable,
} from './errors.ts';

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

  it('answers oversized bodies with 413 naming the limit in units, and unknown content types with 415', async () => {
    const a = await app();
    const big = await a.inject({
      method: 'POST',
      url: '/legacy/json',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ x: 'y'.repeat(200) }),
    });
    assert.equal(big.statusCode, 413);
    assert.equal(big.json().status, 0);
    assert.equal(big.json().msg, 'request body is too large: at most 64 bytes');
    const k = Fastify({ logger: false, bodyLimit: 16 * 1024 });
    k.decorate('envelopes', new EnvelopeTable());
    installErrorHandling(k);
    k.post('/p', async () => 'ok');
    const kib = await k.inject({ method: 'POST', url: '/p', payload: { x: 'y'.repeat(20_000) } });
    assert.equal(kib.statusCode, 413);
    assert.match(kib.body, /request body is too large: at most 16 KiB/);
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

  it('lets a route at the root name its envelope, and keeps any-path routes out of 405', async () => {
    const a = Fastify({ logger: false });
    a.decorate('envelopes', new EnvelopeTable());
    installErrorHandling(a);
    a.put('/:name', { config: { envelope: 'text', anyPath: true } }, async () => {
      throw badRequest('bad name');
    });
    await a.ready();
    const r = await a.inject({ method: 'PUT', url: '/x' });
    assert.equal(r.statusCode, 400);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.body, 'bad name\n');
    const other = await a.inject({ url: '/x' });
    assert.equal(other.statusCode, 404, 'GET /x is unknown, not a PUT-only path');
    assert.equal(other.json().status, 0, 'and answers in the fallback envelope');
    assert.deepEqual(a.routeList(), ['PUT /:name']);
  });

  it('matches a :param segment of an envelope prefix against any one segment', () => {
    const t = new EnvelopeTable(ENVELOPES.v1);
    t.mount('/proxy', 'text');
    t.mount('/proxy/t/:secret/npm', 'legacy');
    t.mount('/proxy/t/:secret/hf', 'file');
    assert.equal(t.forPath('/proxy/t/abc/npm/left-pad'), ENVELOPES.legacy);
    assert.equal(t.forPath('/proxy/t/abc/npm'), ENVELOPES.legacy);
    assert.equal(t.forPath('/proxy/t/abc/hf/x'), ENVELOPES.file);
    assert.equal(t.forPath('/proxy/t/abc/npmx/y'), ENVELOPES.text);
    assert.equal(t.forPath('/proxy/t/a/b/npm/y'), ENVELOPES.text, 'one segment only');
    assert.equal(t.forPath('/proxy/t//npm/y'), ENVELOPES.text, 'an empty segment is none');
    assert.equal(t.forPath('/other'), ENVELOPES.v1);
  });

  it('keeps AppError fields', () => {
    const e = new AppError('X', 418, 'teapot', { cause: new Error('c'), headers: { a: 1 } });
    assert.equal(e.status, 418);
    assert.deepEqual(e.headers, { a: 1 });
    assert.ok(e.cause instanceof Error);
  });
});

describe('how failures are logged', () => {
  // One app logging into `lines`; each route fails one way.
  async function logged() {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    const logger = createLogger('info', { write: (s: string) => stream.write(s) });
    // The log controller of the real composition: a refusal is written with the request's one line.
    const a = Fastify({
      loggerInstance: logger as unknown as FastifyBaseLogger,
      logController: new OnceLogController(),
    });
    a.decorate('envelopes', new EnvelopeTable());
    installErrorHandling(a);
    a.envelopes.mount('/file', 'file');
    const upstream = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    a.get('/file/bad', async () => {
      throw badRequest('key is too long', 'BAD_KEY');
    });
    a.get('/file/full', async () => {
      throw new AppError('STORAGE_FULL', 507, 'storage quota is full');
    });
    a.get('/file/upstream', async () => {
      throw badGateway('cannot fetch the diagram source', 'BAD_GATEWAY', { cause: upstream });
    });
    a.get('/file/raw-upstream', async () => {
      throw upstream;
    });
    a.get('/file/busy', async () => {
      throw unavailable('the store is down', 5);
    });
    a.get('/file/bug', async () => {
      throw new TypeError('x is undefined');
    });
    // One error object for every request: only the request whose route logged it skips the line.
    const shared = badGateway('the mirror failed', 'MIRROR_FAILED');
    a.get<{ Querystring: { mark?: string } }>('/file/shared', async (req, reply) => {
      if (req.query.mark) {
        req.log.warn({ host: 'mirror.test' }, 'route logged it');
        throw alreadyLogged(reply, shared);
      }
      throw shared;
    });
    a.post('/file/body', async () => 'ok');
    a.get('/file/slow', (req, reply) => {
      req.raw.once('close', () => reply.code(204).send());
    });
    await a.ready();
    const failure = async (url: string, method: 'GET' | 'POST' = 'GET') => {
      const from = lines.length;
      const r = await a.inject({
        method,
        url,
        ...(method === 'POST'
          ? { payload: `"${'x'.repeat(2_000_000)}"`, headers: { 'content-type': 'application/json' } }
          : {}),
      });
      // The line about the failure: not Fastify's incoming/completed lines.
      const mine = lines
        .slice(from)
        .filter((l) => !/^(incoming request|request completed)$/.test(String(l['msg'])));
      assert.equal(mine.length, 1, JSON.stringify(mine));
      return { status: r.statusCode, line: mine[0] as Record<string, unknown> };
    };
    return { a, failure, lines };
  }

  const stackOf = (l: Record<string, unknown>) => (l['err'] as { stack?: string } | undefined)?.stack;

  it('logs a refused request (4xx) at info without a stack', async () => {
    const { a, failure } = await logged();
    const { status, line } = await failure('/file/bad');
    assert.equal(status, 400);
    assert.equal(line['level'], 30);
    assert.equal(line['code'], 'BAD_KEY');
    assert.equal(stackOf(line), undefined);
    const big = await failure('/file/body', 'POST');
    assert.equal(big.status, 413);
    assert.equal(big.line['level'], 30);
    assert.equal(stackOf(big.line), undefined);
    await a.close();
  });

  it('logs a full store (507) at warn without a stack', async () => {
    const { a, failure } = await logged();
    const { status, line } = await failure('/file/full');
    assert.equal(status, 507);
    assert.equal(line['level'], 40);
    assert.equal(line['code'], 'STORAGE_FULL');
    assert.equal(stackOf(line), undefined);
    await a.close();
  });

  it('logs an upstream failure (502) at warn with its cause and no stack, mapped or not', async () => {
    const { a, failure } = await logged();
    for (const url of ['/file/upstream', '/file/raw-upstream']) {
      const { status, line } = await failure(url);
      assert.equal(status, 502);
      assert.equal(line['level'], 40);
      assert.match(String(line['cause']), /UND_ERR_SOCKET: other side closed/);
      assert.equal(stackOf(line), undefined);
      assert.doesNotMatch(JSON.stringify(line), /at [^ ]+ \(/, 'no stack frame anywhere in the line');
    }
    await a.close();
  });

  it('skips the line of a failure only for the request whose route logged it', async () => {
    const { a, failure } = await logged();
    const marked = await failure('/file/shared?mark=1');
    assert.equal(marked.status, 502);
    assert.equal(marked.line['msg'], 'route logged it');
    // The same error object thrown by another request is that request's failure, logged once.
    const other = await failure('/file/shared');
    assert.equal(other.status, 502);
    assert.equal(other.line['msg'], 'request failed');
    assert.equal(other.line['code'], 'MIRROR_FAILED');
    await a.close();
  });

  it('keeps the stack of a failure of devutil itself (500, 503)', async () => {
    const { a, failure } = await logged();
    for (const [url, want] of [
      ['/file/bug', 500],
      ['/file/busy', 503],
    ] as const) {
      const { status, line } = await failure(url);
      assert.equal(status, want);
      assert.equal(line['level'], 50);
      // .js where the test runner runs the file compiled (Node 20).
      assert.match(String(stackOf(line)), /errors\.test\.[jt]s/);
    }
    await a.close();
  });

  it('logs a request whose client left before the answer as one "request aborted" line', async () => {
    const { a, lines } = await logged();
    await a.listen({ port: 0, host: '127.0.0.1' });
    const { port } = a.server.address() as { port: number };
    const gone = new Promise<void>((resolve) => {
      const req = httpGet({
        host: '127.0.0.1',
        port,
        path: '/file/slow',
        headers: { 'x-request-id': 'gone-1' },
      });
      req.on('error', () => resolve());
      setTimeout(() => req.destroy(), 100);
    });
    await gone;
    const slow = (l: Record<string, unknown>) =>
      (l['req'] as { url?: string } | undefined)?.url === '/file/slow';
    for (let i = 0; i < 100 && !lines.some(slow); i++) await new Promise((r) => setTimeout(r, 20));
    await a.close();
    const mine = lines.filter(slow);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    assert.equal(mine[0]?.['msg'], 'request aborted');
  });
});

// Every logged URL shape through the real logger: secrets in messages, fields of any name, nested
// fields, request URLs, error messages, stacks and causes come out as [redacted].
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Logger } from 'pino';
import { jsonInString } from '../../../test/helpers/log-lines.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { briefError, createLogger, protectSecrets, redact, serializeError } from './logger.ts';

// Built at run time so that no secret-shaped literal sits in the source.
const BOT = registerSecret(`${'7'.repeat(10)}:AAH${'x'.repeat(8)}_-${'Q'.repeat(24)}`);
const SIG = registerSecret(`9f${'a1b2c3d4'.repeat(8)}`);
const CRED = registerSecret('AKIAEXAMPLEKEY77/20250101/us-east-1/s3/aws4_request');
const PREFIX = registerSecret('prefix-Secret_9876');
const LITERAL = registerSecret('admin-token-4f5e6d7c');
const PASS = registerSecret('hunter2-pass-word');
const UPLOAD = registerSecret('fedcba98'.repeat(4));
const RECIPIENT = registerSecret(`tgr_${'Rc9-_x'.repeat(7)}z`);
protectSecrets([PREFIX, LITERAL]);

const signed = `https://bucket.s3.example.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${encodeURIComponent(CRED)}&X-Amz-Signature=${SIG}`;

function capture(): { log: Logger; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  return { log: createLogger('debug', stream), text: () => chunks.join('') };
}

const fakeReq = (url: string) => ({ method: 'GET', url, headers: { host: 'x' }, ip: '127.0.0.1' });

const shapes: [string, (l: Logger) => void, string[]][] = [
  [
    'a bot URL in the message',
    (l) => l.warn(`POST https://api.telegram.org/bot${BOT}/sendMessage failed`),
    [BOT],
  ],
  [
    'a bare bot token in a field',
    (l) => l.info({ detail: `token ${BOT} refused` }, 'telegram refused'),
    [BOT],
  ],
  [
    'a bot token right after the word bot, with no slash before it',
    (l) => l.warn({ detail: `getMe for bot${BOT} failed` }, `Bot${BOT} refused`),
    [BOT],
  ],
  ['a signed upstream URL in a field', (l) => l.warn({ url: signed }, 'upstream failed'), [SIG, CRED]],
  ['a signed URL as an interpolation argument', (l) => l.info('fetching %s', signed), [SIG]],
  [
    'a redirect Location with token= and sig=',
    (l) => l.info({ location: `/dl?token=${SIG}&sig=${SIG}` }),
    [SIG],
  ],
  [
    'user:password@ in a nested field',
    (l) => l.warn({ up: { url: `https://u:${PASS}@github.com/a` } }),
    [PASS],
  ],
  ['signed URLs in an array field', (l) => l.info({ urls: ['/a', signed] }, 'tried'), [SIG]],
  ['a Bearer token in free text', (l) => l.warn(`upstream said: Bearer ${SIG}`), [SIG]],
  ['req.url with a bot path', (l) => l.info({ req: fakeReq(`/rest/api/v1/telegram/bot${BOT}/x`) }), [BOT]],
  [
    'req.url with the proxy prefix',
    (l) => l.info({ req: fakeReq(`/proxy/t/${PREFIX}/github.com/a/b`) }),
    [PREFIX],
  ],
  [
    'a raw host-mounted URL with the proxy prefix',
    (l) => l.debug({ originalUrl: `/t/${PREFIX}/pypi.org/simple/` }, 'rewrite url'),
    [PREFIX],
  ],
  ['a configured secret anywhere in text', (l) => l.error(`admin call with ${LITERAL} failed`), [LITERAL]],
  [
    'an error message with a signed URL',
    (l) => l.error({ err: new Error(`GET ${signed} failed`) }, 'request failed'),
    [SIG, CRED],
  ],
  [
    'an error cause chain with a bot token',
    (l) =>
      l.error({
        err: new Error('send failed', { cause: new Error('x', { cause: new Error(`/bot${BOT}/`) }) }),
      }),
    [BOT],
  ],
  ['an error stack with a token', (l) => l.error({ err: new Error(`token=${SIG}`) }), [SIG]],
  ['a thrown plain object with an apiKey', (l) => l.error({ err: { apiKey: BOT, note: 'x' } }), [BOT]],
  ['a thrown string with a signature', (l) => l.error({ err: `failed ?Signature=${SIG}` }), [SIG]],
  ['JSON quoted in a message', (l) => l.warn(`upstream body {"token":"${SIG}","ok":false}`), [SIG]],
  [
    'a recipient token as an ntfy topic and a Gotify ?token=',
    (l) => {
      l.info({ req: fakeReq(`/telegram/${RECIPIENT}`) });
      l.info({ req: fakeReq(`/telegram/message?token=${RECIPIENT}`) });
    },
    [RECIPIENT],
  ],
  [
    'a recipient token with its characters percent-encoded in the path',
    (l) => {
      const enc = [...RECIPIENT].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
      l.info({ req: fakeReq(`/telegram/r/${RECIPIENT.replace('_', '%5F')}`) });
      l.info({ req: fakeReq(`/telegram/${enc}`) });
      l.info({ req: fakeReq(`/telegram/${enc.toUpperCase()}`) });
    },
    [RECIPIENT, RECIPIENT.replace('_', '%5F'), RECIPIENT.slice(4)],
  ],
  [
    'a resumable upload URL (its id is the capability)',
    (l) => l.info({ req: fakeReq(`/api/upload/${UPLOAD}`) }),
    [UPLOAD],
  ],
];

describe('log redaction through the real logger', () => {
  for (const [name, write, secrets] of shapes) {
    it(`redacts ${name}`, () => {
      const { log, text } = capture();
      write(log);
      const out = text();
      assert.ok(out.length > 0, 'a line was written');
      for (const s of secrets) {
        assert.ok(!out.includes(s), `${s.slice(0, 12)}... leaked: ${out}`);
        assert.ok(!out.includes(encodeURIComponent(s)), `${s.slice(0, 12)}... leaked encoded: ${out}`);
      }
      assert.match(out, /\[redacted\]/);
    });
  }

  it('leaves ordinary text, paths and query strings alone', () => {
    for (const s of [
      '/api/ip?format=text',
      '/proxy/github.com/o/r/info/refs?service=git-upload-pack',
      'expected host=address:port',
      'listening on http://127.0.0.1:8080',
      'token mismatch for this file',
    ])
      assert.equal(redact(s), s);
  });

  it('does not mutate the object it logs', () => {
    const { log } = capture();
    const fields = { url: signed };
    log.info(fields, 'x');
    assert.equal(fields.url, signed);
  });

  it('writes a thrown plain object as an object in the line, not JSON text in a string', () => {
    const { log, text } = capture();
    log.warn({ err: { message: 'store down', code: 'ECONNREFUSED', port: 6379 } }, 'x');
    log.warn({ err: briefError(new Error('store down')) }, 'y');
    for (const line of text().trim().split('\n')) {
      const o = JSON.parse(line) as { err: Record<string, unknown> };
      assert.equal(o.err['message'], 'store down', line);
      assert.equal(typeof o.err['type'], 'string', line);
      assert.equal(jsonInString(o), undefined, line);
    }
  });

  it('logs JSON text (an upstream error body, a stringified error) as the structure it holds', () => {
    const { log, text } = capture();
    const body = JSON.stringify({
      error: { message: 'quota exceeded', token: PASS, detail: `/bot${BOT}/getMe` },
    });
    log.warn({ said: body, nested: { body } }, 'pool refused');
    log.warn({ err: new Error(body) }, 'thrown body');
    log.warn({ err: new Error('token exchange failed', { cause: JSON.parse(body) }) }, 'cause body');
    log.warn({ err: new Error('outer', { cause: new Error(body) }) }, 'cause message');
    log.warn({ err: { message: body } }, 'plain object');
    const lines = text().trim().split('\n');
    assert.equal(lines.length, 5);
    for (const line of lines) {
      const o = JSON.parse(line) as Record<string, Record<string, unknown>>;
      assert.equal(jsonInString(o), undefined, line);
      assert.doesNotMatch(line, /\[object \w+\]/, line);
      for (const secret of [PASS, BOT]) assert.ok(!line.includes(secret), line);
    }
    const [said, thrown, causeBody, causeMessage, plain] = lines.map(
      (l) => JSON.parse(l) as Record<string, Record<string, unknown>>,
    );
    assert.deepEqual(said?.['said'], {
      error: { message: 'quota exceeded', token: '[redacted]', detail: '/bot[redacted]/getMe' },
    });
    assert.deepEqual(said?.['nested']?.['body'], said?.['said']);
    assert.equal(thrown?.['err']?.['message'], 'quota exceeded');
    assert.deepEqual(thrown?.['err']?.['body'], said?.['said']);
    assert.equal(causeBody?.['err']?.['message'], 'token exchange failed');
    assert.equal(causeBody?.['err']?.['cause'], 'quota exceeded');
    assert.deepEqual(causeBody?.['err']?.['body'], said?.['said']);
    assert.equal(causeMessage?.['err']?.['cause'], 'quota exceeded');
    assert.deepEqual(causeMessage?.['err']?.['body'], said?.['said']);
    assert.equal(plain?.['err']?.['message'], 'quota exceeded');
  });

  it('serialises any thrown value, not only Errors', () => {
    assert.deepEqual(serializeError(undefined), { type: 'undefined', message: 'undefined' });
    // A plain object stays structured: no JSON text inside the JSON line.
    assert.deepEqual(serializeError({ a: 1, message: 'redis down', code: 'ECONNREFUSED' }), {
      type: 'object',
      message: 'redis down',
      code: 'ECONNREFUSED',
      cause: undefined,
      fields: { a: 1 },
    });
    assert.equal(serializeError({ a: 1 }).message, 'a thrown object without a message');
    assert.deepEqual(serializeError({ apiKey: 'k'.repeat(30) })['fields'], { apiKey: '[redacted]' });
    assert.deepEqual(serializeError(briefError(new TypeError('boom'))), {
      type: 'TypeError',
      message: 'boom',
      code: undefined,
      cause: undefined,
    });
    const e = serializeError(new Error('outer', { cause: new Error('inner') }));
    assert.equal(e['cause'], 'inner');
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    assert.equal(serializeError(cyclic).message, 'a thrown object without a message');
  });
});

describe('configured secret values', () => {
  it('stay masked while any holder keeps them, and only until the last one releases them', () => {
    const value = `held-${randomUUID()}`;
    const line = (v: string) => `GET /x/${v}/y`;
    const first = protectSecrets([value, 'short']);
    const second = protectSecrets([value, value]);
    assert.equal(redact(line(value)), line('[redacted]'));
    first();
    first(); // a release counts once
    assert.equal(redact(line(value)), line('[redacted]'), 'the second holder still masks it');
    second();
    assert.equal(redact(line(value)), line(value), 'nobody holds it: ordinary text again');
    // The module's own values are untouched by the others' releases.
    assert.equal(redact(`x ${LITERAL} y`), 'x [redacted] y');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactText, redactUrl, serializeError } from './logger.ts';

describe('log redaction', () => {
  const table: [string, string][] = [
    ['/bot123456:AAH-secret_token/sendMessage', '/bot[redacted]/sendMessage'],
    ['https://user:tok3n@github.com/a/b.git', 'https://user:[redacted]@github.com/a/b.git'],
    ['redis://:hunter2@127.0.0.1:6379', 'redis://:[redacted]@127.0.0.1:6379'],
    [
      '/dl?X-Amz-Signature=abc&X-Amz-Credential=k&x=1',
      '/dl?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&x=1',
    ],
    ['/x?token=t&sig=s&name=n', '/x?token=[redacted]&sig=[redacted]&name=n'],
    ['/api/ip?format=text', '/api/ip?format=text'],
  ];
  for (const [input, want] of table) {
    it(`redacts ${input}`, () => assert.equal(redactUrl(input), want));
  }
  it('serialises any thrown value, not only Errors', () => {
    assert.deepEqual(serializeError(undefined), { type: 'undefined', message: 'undefined' });
    assert.equal(
      serializeError('boom /bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALD/x').message,
      'boom /bot[redacted]/x',
    );
    assert.equal(serializeError({ a: 1 }).message, '{"a":1}');
    const e = serializeError(new Error('outer', { cause: new Error('inner') }));
    assert.equal(e['cause'], 'inner');
  });
  it('masks bot tokens in free text', () => {
    assert.equal(
      redactText('failed for 1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 now'),
      'failed for [redacted] now',
    );
  });
});

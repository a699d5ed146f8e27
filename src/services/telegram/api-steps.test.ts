// Steps of the Bot API gateway's call() run alone, without a server: routing a recipient token's
// method (its own spelling of one it was given, or 403), the metrics' kind of a call, and the
// answer to Telegram's refusals (status, body parameters, Retry-After, 503 for senders that retry).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../infra/http/errors.ts';
import { refusal } from './api-answer.ts';
import { callKind, permittedMethod } from './api-gateway.ts';

type ApiError = Parameters<typeof refusal>[0];
const apiError = (errorCode: number, more: Partial<ApiError> = {}): ApiError => ({
  kind: 'api-error',
  status: errorCode >= 400 && errorCode < 600 ? errorCode : 400,
  errorCode,
  description: `Bad Request: error ${errorCode}`,
  ...more,
});

describe('Bot API gateway steps called alone', { timeout: 10_000 }, () => {
  it('routes a recipient method in any letter case to its canonical name', () => {
    assert.equal(permittedMethod({ methods: ['sendMessage', 'sendPhoto'] }, 'SENDPHOTO'), 'sendPhoto');
  });

  it('refuses a method the recipient token was not given, or no recipient method at all, with 403', () => {
    for (const method of ['sendDocument', 'getUpdates', 'forwardMessage'])
      assert.throws(
        () => permittedMethod({ methods: ['sendMessage'] }, method),
        (e: unknown) =>
          e instanceof AppError &&
          e.status === 403 &&
          e.code === 'METHOD_NOT_ALLOWED' &&
          e.message.includes('may call only sendMessage'),
      );
  });

  it('counts long polls, uploads, messages and other calls apart', () => {
    assert.equal(callKind(30, 'json', false), 'poll');
    assert.equal(callKind(null, 'multipart', true), 'upload');
    assert.equal(callKind(null, 'form', true), 'message');
    assert.equal(callKind(null, 'json', false), 'call');
  });

  it("passes Telegram's 4xx on with its status, description and migrate_to_chat_id", () => {
    const a = refusal(apiError(400, { migrateTo: -100123 }), false);
    assert.equal(a.status, 400);
    assert.equal(a.retryAfter, undefined);
    assert.deepEqual(a.body, {
      ok: false,
      error_code: 400,
      description: 'Bad Request: error 400',
      parameters: { migrate_to_chat_id: -100123 },
    });
  });

  it("answers Telegram's 429 with 429, retry_after and a whole-second Retry-After", () => {
    const a = refusal(apiError(429, { retryAfter: 2.5 }), false);
    assert.equal(a.status, 429);
    assert.equal(a.retryAfter, 3);
    assert.deepEqual(a.body['parameters'], { retry_after: 2.5 });
  });

  it('answers a 429 with 503 for a sender that retries 5xx only, keeping the wait', () => {
    const a = refusal(apiError(429, { retryAfter: 7 }), true);
    assert.equal(a.status, 503);
    assert.equal(a.retryAfter, 7);
    assert.equal(a.body['error_code'], 503);
    assert.match(String(a.body['description']), /^Service Unavailable: telegram: /);
  });

  it('answers 400 for an error code that is not an HTTP error status', () => {
    const a = refusal(apiError(42), false);
    assert.equal(a.status, 400);
    assert.equal(a.body['error_code'], 42);
  });
});

// The transfer link handlers called alone, without a server: the QR code handler's refusals and
// its answer, written into a reply that records what it is told.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../../infra/http/errors.ts';
import { QR_MAX_CHARS } from './clients.ts';
import { type QrReq, qrCode } from './handlers.ts';

/** A reply that keeps its headers, type and body. */
function recordingReply() {
  const r = {
    headers: {} as Record<string, string>,
    body: undefined as unknown,
    header(k: string, v: string) {
      r.headers[k] = v;
      return r;
    },
    type(t: string) {
      return r.header('content-type', t);
    },
    send(b: unknown) {
      r.body = b;
      return r;
    },
  };
  return r;
}

const ask = (text: unknown, reply = recordingReply()) =>
  qrCode({ query: { text } } as QrReq, reply as unknown as FastifyReply).then(() => reply);

describe('transfer handlers called alone', { timeout: 10_000 }, () => {
  it('refuses a missing or empty text with 400', async () => {
    for (const text of [undefined, '', 42])
      await assert.rejects(ask(text), (e: unknown) => e instanceof AppError && e.status === 400);
  });

  it('refuses a text past the QR capacity with 413', async () => {
    await assert.rejects(
      ask('x'.repeat(QR_MAX_CHARS + 1)),
      (e: unknown) => e instanceof AppError && e.status === 413,
    );
  });

  it('answers a link as a cacheable SVG that runs nothing', async () => {
    const r = await ask('https://example.test/abc');
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.equal(r.headers['cache-control'], 'public, max-age=86400');
    assert.equal(r.headers['content-security-policy'], "default-src 'none'");
    assert.match(String(r.body), /^<svg[\s>]|<svg /);
  });
});

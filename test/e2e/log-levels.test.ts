// How real failures of the real composition are logged: a full store (507) at warn and a refused
// request (4xx) at info, neither with a stack (a fault of devutil itself keeps its stack:
// src/infra/http/errors.test.ts; an upstream's fault has none: upstream-faults.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, LogCapture } from '../helpers/server.ts';

function form(bytes: number): { payload: Buffer; headers: Record<string, string> } {
  const b = 'devutil-log-levels';
  const payload = Buffer.concat([
    Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`),
    Buffer.alloc(bytes, 120),
    Buffer.from(`\r\n--${b}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${b}` } };
}

describe('log levels of failed requests', () => {
  let app: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    app = await buildTestServer({
      logs,
      overrides: { files: { quotaBytes: 10_000, rateLimit: 'off', codec: 'none' } },
    });
  });
  after(async () => app?.close());

  /** The lines of one request, by its X-Request-Id, without Fastify's incoming/completed pair. */
  const linesOf = (id: string) =>
    logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((o) => o['reqId'] === id && !/^(incoming request|request completed)$/.test(String(o['msg'])));

  it('logs a full store (507) once at warn, without a stack', async () => {
    assert.equal(
      (await app.inject({ method: 'POST', url: '/api/file/fits', ...form(6000) })).statusCode,
      200,
    );
    const r = await app.inject({
      method: 'POST',
      url: '/api/file/too-much',
      ...form(6000),
      headers: { ...form(0).headers, 'x-request-id': 'full-507' },
    });
    assert.equal(r.statusCode, 507, r.body);
    const lines = linesOf('full-507');
    const failed = lines.filter((l) => Number(l['level']) >= 40);
    assert.equal(failed.length, 1, JSON.stringify(lines));
    assert.equal(failed[0]?.['level'], 40);
    assert.equal(failed[0]?.['code'], 'STORAGE_FULL');
    assert.doesNotMatch(JSON.stringify(lines), /"stack"/);
  });

  it('logs a refused request (4xx) at info, without a stack', async () => {
    const r = await app.inject({ url: '/api/file/.hidden', headers: { 'x-request-id': 'bad-400' } });
    assert.ok(r.statusCode >= 400 && r.statusCode < 500, String(r.statusCode));
    for (const l of linesOf('bad-400')) assert.ok(Number(l['level']) <= 30, JSON.stringify(l));
    assert.doesNotMatch(JSON.stringify(linesOf('bad-400')), /"stack"/);
  });
});

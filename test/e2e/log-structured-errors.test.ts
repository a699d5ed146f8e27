// Failures logged as structure, not JSON text inside the JSON line: every upstream here answers 500
// with a JSON error body (the image source, the Telegram relay and Bot API gateway, a diagram
// source, the avatar mirror, the S3 store, the identity provider's discovery), a diagram fails to
// render, and each line the server wrote is parsed: no string field holds a JSON object or array,
// a cause is text (never "[object Response]"), and the body's credentials never appear.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { jsonInString } from '../helpers/log-lines.ts';
import { testSecret } from '../helpers/secrets.ts';
import { buildTestServer, LogCapture } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const BOT_KEY = '123456789:AAStructStructStructStructStructStr';
const BODY_TOKEN = testSecret('upstream-token-');
const S3_SECRET = testSecret('s3-secret-');
const OIDC_SECRET = testSecret('oidc-secret-');
// What a broken upstream answers: a JSON error document, with a credential-named field in it.
const BODY = JSON.stringify({ error: { code: 'Boom', message: 'upstream exploded', token: BODY_TOKEN } });

describe('failures are logged as structured fields', { timeout: 180_000 }, () => {
  let up: Server;
  let app: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    up = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' }).end(BODY);
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as { port: number }).port;
    app = await buildTestServer({
      logs,
      env: {
        DEVUTIL_STORAGE_BACKEND: 's3',
        DEVUTIL_STORAGE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
        DEVUTIL_STORAGE_S3_BUCKET: 'struct',
        DEVUTIL_STORAGE_S3_ACCESS_KEY_ID: 'AKIASTRUCTTEST',
        DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY: S3_SECRET,
        DEVUTIL_STORAGE_S3_FORCE_PATH_STYLE: 'true',
      },
      overrides: {
        egress: { resolve: [`json.test=127.0.0.1:${port}`] },
        avatar: { upstream: 'http://json.test', upstreamTimeoutMs: 5000, errorTtlSec: 0, missTtlSec: 0 },
        image: {
          upstreamUrl: 'http://json.test/seed/{id}/{width}/{height}',
          sources: ['upstream'],
          rateLimit: 'off',
        },
        telegram: { apiBase: 'http://json.test', rateLimit: 'off', keyRateLimit: 'off' },
        admin: {
          oidcIssuer: 'http://json.test/',
          oidcClientId: 'devutil-admin',
          oidcClientSecret: OIDC_SECRET,
          oidcAllowedUsers: ['ops@example.org'],
        },
        diagrams: { proxyHosts: ['json.test'], prestart: false },
      },
    });
  });
  after(async () => {
    await app?.close();
    up?.close();
  });

  /** Lines logged while `ask` ran, each parsed; none holds JSON text, a secret or "[object ...]". */
  async function linesOf(ask: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
    const from = logs.lines.length;
    await ask();
    const lines = logs.lines.slice(from);
    assert.ok(lines.length > 0, 'the failure was logged');
    const objs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const [i, o] of objs.entries()) {
      assert.equal(jsonInString(o), undefined, `a string field holds JSON: ${lines[i]}`);
      assert.doesNotMatch(lines[i] ?? '', /\[object \w+\]/, 'a cause is text');
      for (const s of [BODY_TOKEN, S3_SECRET, OIDC_SECRET, BOT_KEY])
        assert.ok(!lines[i]?.includes(s), lines[i]);
    }
    return objs;
  }
  const inject = (o: InjectOptions) => async () => {
    const r = await app.inject(o);
    assert.ok(r.statusCode >= 400, `${o.url} failed: ${r.statusCode}`);
    return r;
  };

  const cases: [string, InjectOptions][] = [
    ['the image upstream', { url: '/rest/api/v1/image?id=s1&width=64' }],
    [
      'the Telegram relay',
      {
        method: 'POST',
        url: '/rest/api/v1/telegram',
        payload: { apiKey: BOT_KEY, chatId: '12345', msgText: 'x' },
      },
    ],
    [
      'the Bot API gateway',
      { method: 'POST', url: `/telegram/bot${BOT_KEY}/sendMessage`, payload: { chat_id: 1, text: 'x' } },
    ],
    [
      'a diagram source',
      { url: `/plantuml/proxy?fmt=txt&src=${encodeURIComponent('http://json.test/d.puml')}` },
    ],
    ['the avatar mirror', { url: `/avatar/${'5'.repeat(32)}?d=404` }],
    ['the S3 store', { url: '/api/file/no-such-key' }],
  ];
  for (const [name, o] of cases)
    it(`logs a 500 with a JSON body from ${name} as fields`, async () => {
      await linesOf(inject(o));
    });

  it('logs the identity provider failure with its cause as text', async () => {
    const objs = await linesOf(inject({ url: '/admin/oidc/login' }));
    const failed = objs.find((o) => o['msg'] === 'oidc discovery failed');
    const err = failed?.['err'] as Record<string, unknown> | undefined;
    assert.equal(typeof err?.['message'], 'string', JSON.stringify(failed));
    assert.match(String(err?.['cause']), /^HTTP 500\b/);
  });

  it('logs a render failure as fields', { skip: toolSkip('dot', ['-V']) }, async () => {
    await linesOf(
      inject({
        method: 'POST',
        url: '/plantuml/graphviz/svg',
        payload: 'digraph { a -> b [label=<<b>] }',
        headers: { 'content-type': 'text/plain' },
      }),
    );
  });
});

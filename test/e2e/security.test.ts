// Security checklist over the real composition: page headers, stored active content never
// rendered inline, no secrets or internals in error answers or in the request logs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../helpers/leaks.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { buildTestServer, LogCapture } from '../helpers/server.ts';

function multipart(name: string, type: string, content: string) {
  const boundary = 'XsecX';
  const payload = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n${content}\r\n--${boundary}--\r\n`;
  return { headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload };
}

describe('security checklist', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
  });
  after(async () => app.close());

  it('serves the web page with a CSP without inline scripts, nosniff and frame-ancestors', async () => {
    const r = await app.inject({ url: '/' });
    assert.equal(r.statusCode, 200);
    const csp = String(r.headers['content-security-policy']);
    const script = /script-src ([^;]+)/.exec(csp)?.[1] ?? /default-src ([^;]+)/.exec(csp)?.[1] ?? '';
    assert.ok(script.length > 0, `no script policy in ${csp}`);
    assert.ok(!script.includes("'unsafe-inline'") && !script.includes("'unsafe-eval'"), csp);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(r.body), 'inline <script> in the page');
  });

  const active: [string, string, string][] = [
    ['page.html', 'text/html', '<script>alert(document.cookie)</script>'],
    ['pic.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'],
    ['app.js', 'application/javascript', 'alert(1)'],
    [
      'x.xml',
      'application/xhtml+xml',
      '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>',
    ],
    ['sniff.txt', 'application/octet-stream', '<html><script>alert(1)</script></html>'],
  ];
  for (const [name, type, content] of active) {
    it(`never renders stored ${name} (${type}) inline`, async () => {
      const key = `sec-${name.replace(/\W/g, '-')}`;
      const up = await app.inject({
        method: 'POST',
        url: `/api/file/${key}`,
        ...multipart(name, type, content),
      });
      assert.equal(up.statusCode, 200, up.body);
      const r = await app.inject({ url: `/api/file/${key}` });
      assert.equal(r.statusCode, 200);
      assert.match(String(r.headers['content-disposition']), /^attachment/);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.match(String(r.headers['content-security-policy']), /sandbox/);
    });
  }

  it('answers errors without stacks, paths or internals', async () => {
    const probes = [
      {
        method: 'POST' as const,
        url: '/rest/api/v1/telegram',
        headers: { 'content-type': 'application/json' },
        payload: '{"apiKey":',
        status: 400,
      },
      { method: 'GET' as const, url: '/api/file/..%2F..%2Fetc%2Fpasswd', status: 400 },
      { method: 'GET' as const, url: '/rest/api/v1/image?width=-1', status: 400 },
      { method: 'GET' as const, url: '/proxy/evil.example/x', status: 403 },
    ];
    for (const { status, ...p } of probes) {
      const r = await app.inject(p);
      assert.equal(r.statusCode, status, `${p.url}: ${r.body.slice(0, 200)}`);
      assertNoInternals(r.body, p.url);
      assert.doesNotMatch(r.body, /Error:/, p.url);
    }
  });
});

describe('secrets in every logged URL shape', () => {
  // Built at run time so that no secret-shaped literal sits in the source.
  const prefix = registerSecret(`pfx${'Z9_'.repeat(5)}`);
  const bot = registerSecret(`${'8'.repeat(10)}:AAE${'k'.repeat(32)}`);
  const sig = registerSecret('c0ffee'.repeat(8));
  const logs = new LogCapture();
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ logs, overrides: { proxy: { secret: prefix, host: 'proxy.test' } } });
  });
  after(async () => app.close());

  // [shape, request]: each is logged (request line, rewrite line, error line) at debug level.
  const shapes: [string, { url: string; headers?: Record<string, string> }][] = [
    ['the proxy prefix under /proxy', { url: `/proxy/t/${prefix}/evil.example/x` }],
    [
      'the proxy prefix on the proxy host (raw and rewritten URL)',
      { url: `/t/${prefix}/evil.example/x`, headers: { host: 'proxy.test' } },
    ],
    ['the proxy prefix on a path no route owns', { url: `/t/${prefix}/x` }],
    ['a mistyped prefix carrying the secret', { url: `/proxy/t/${prefix}x/github.com/o/r` }],
    ['a bot token in an unknown path', { url: `/rest/api/v1/telegram/bot${bot}/sendMessage` }],
    ['a bare bot token in a query', { url: `/api/ip?k=${bot}` }],
    ['a signed query string', { url: `/api/file/x?X-Amz-Credential=AKIA/${sig}&X-Amz-Signature=${sig}` }],
    [
      'a token= query',
      { url: `/proxy/t/${prefix}/github.com/o/r/info/refs?service=git-upload-pack&token=${sig}` },
    ],
  ];
  for (const [name, req] of shapes) {
    it(`never logs ${name}`, async () => {
      const from = logs.lines.length;
      await app.inject(req);
      const lines = logs.lines.slice(from).join('\n');
      assert.ok(lines.length > 0, 'the request was logged');
      for (const s of [prefix, bot, sig])
        assert.ok(!lines.includes(s), `${name} leaked: ${lines.slice(0, 400)}`);
      assert.match(lines, /\[redacted\]/);
    });
  }
});

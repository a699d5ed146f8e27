// Security checklist over the real composition: page headers, stored active content never
// rendered inline, no secrets or internals in error answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../helpers/leaks.ts';
import { buildTestServer } from '../helpers/server.ts';

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

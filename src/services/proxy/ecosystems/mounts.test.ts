// Ecosystem mounts through the real composition: each refuses bad input in its own clients' error
// shape with a truthful status, and refusals reach no upstream, store nothing and log no credential.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { LogCapture, type Running, startTestServer, tempDir } from '../../../../test/helpers/server.ts';

type Res = { statusCode: number; headers: Record<string, string | string[] | undefined>; body: string };

/** A request with its path sent byte for byte (inject() and fetch() would resolve `%2e%2e` first). */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Res> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy ecosystem mounts', { timeout: 30_000 }, () => {
  let app: Running;
  const logs = new LogCapture();
  const cacheDir = tempDir('devutil-eco-cache-');
  before(async () => {
    app = await startTestServer({
      overrides: { proxy: { ecosystems: ['hf', 'npm', 'go'], cacheDir } },
      logs,
    });
  });
  after(async () => {
    await app?.close();
  });

  const json = (body: string) => JSON.parse(body) as { error?: string };
  const TOKEN = 'hf_SeCrEtToKeN1234567890';

  const table: {
    path: string;
    method?: 'GET' | 'PUT' | 'POST' | 'DELETE';
    status: number;
    shape: 'json' | 'text';
  }[] = [
    { path: '/proxy/npm/..', status: 400, shape: 'json' },
    { path: '/proxy/npm/left%2fpad', status: 400, shape: 'json' },
    { path: '/proxy/npm/@scope%2f%2e%2e', status: 400, shape: 'json' },
    { path: '/proxy/npm/left-pad/-/..%2fevil.tgz', status: 400, shape: 'json' },
    { path: '/proxy/npm/left-pad/%00', status: 400, shape: 'json' },
    { path: '/proxy/npm/-/whoami', status: 404, shape: 'json' },
    { path: '/proxy/npm/left-pad', method: 'PUT', status: 405, shape: 'json' },
    { path: '/proxy/npm/left-pad/-/left-pad-1.0.0.tgz', method: 'DELETE', status: 405, shape: 'json' },
    { path: '/proxy/go/golang.org/x/%2e%2e/@v/list', status: 400, shape: 'text' },
    { path: '/proxy/go/golang.org%2fx/@v/list', status: 400, shape: 'text' },
    { path: '/proxy/go/golang.org/x/text/@v/not-a-version.zip', status: 400, shape: 'text' },
    { path: '/proxy/go/golang.org/x/text/@v/v1.0.0.zip', method: 'POST', status: 405, shape: 'text' },
    { path: '/proxy/go/sumdb/evil.example/latest', status: 404, shape: 'text' },
    { path: '/proxy/hf/login', status: 403, shape: 'json' },
    { path: '/proxy/hf/org/model/resolve/main/a/%2e%2e/%2e%2e/b', status: 400, shape: 'json' },
    { path: '/proxy/hf/org/model/resolve/main/a%2fb', status: 400, shape: 'json' },
    { path: '/proxy/hf/org/model/resolve/main/x', method: 'POST', status: 405, shape: 'json' },
    { path: `/proxy/hf/${'a/'.repeat(1100)}`, status: 400, shape: 'json' },
  ];
  for (const c of table)
    it(`answers ${c.method ?? 'GET'} ${c.path.slice(0, 60)} with ${c.status} in the ${c.shape} shape`, async () => {
      const res = await raw(app.url, c.method ?? 'GET', c.path, { authorization: `Bearer ${TOKEN}` });
      assert.equal(res.statusCode, c.status, res.body);
      if (c.shape === 'json') {
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.equal(typeof json(res.body).error, 'string');
      } else {
        assert.match(String(res.headers['content-type']), /^text\/plain/);
        assert.ok(res.body.endsWith('\n') && !res.body.includes('{'));
      }
      assert.ok(!res.body.includes('at ') || !res.body.includes('.ts:'), 'no stack');
    });

  it('answers the checksum database probe for sum.golang.org', async () => {
    const res = await raw(app.url, 'GET', '/proxy/go/sumdb/sum.golang.org/supported');
    assert.equal(res.statusCode, 200);
  });

  it('stored nothing and logged no credential for the refusals', () => {
    const entries = readdirSync(cacheDir, { recursive: true }).filter((f) => String(f).endsWith('.json'));
    assert.deepEqual(entries, []);
    assert.ok(logs.lines.length > 0);
    assert.ok(!logs.text().includes(TOKEN));
  });
});

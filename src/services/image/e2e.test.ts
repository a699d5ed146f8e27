import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type Running, startTestServer, tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';

// Real clients over a real socket: curl downloads, libwebp's own `webpinfo` judges the file
// (a second opinion besides sharp, which also wrote it).
describe('random image over HTTP with curl and webpinfo', {
  skip: toolSkip('curl') || toolSkip('webpinfo', ['-version']),
}, () => {
  let srv: Running;
  const dir = tempDir('devutil-image-e2e-');
  before(async () => {
    srv = await startTestServer({ overrides: { image: { rateLimit: 'off' } } });
  });
  after(async () => srv.close());

  // Async: the server runs in this process, a blocking spawn would starve it.
  const run = promisify(execFile);
  const curl = async (...args: string[]) => (await run('curl', ['-sS', ...args], { timeout: 60_000 })).stdout;

  it('downloads a valid 1920x1080 WebP by default', async () => {
    const out = join(dir, 'default.webp');
    const head = await curl('-D', '-', '-o', out, `${srv.url}/rest/api/v1/image`);
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.match(head, /content-type: image\/webp/i);
    const len = Number(/content-length: (\d+)/i.exec(head)?.[1]);
    assert.equal(readFileSync(out).length, len);
    const info = (await run('webpinfo', [out])).stdout;
    assert.match(info, /Width: 1920/);
    assert.match(info, /Height: 1080/);
    assert.match(info, /No error detected/);
  });

  it('revalidates an id with curl --etag-save/--etag-compare and gets 304', async () => {
    const etags = join(dir, 'etag.txt');
    const url = `${srv.url}/rest/api/v1/image?id=curl&width=320&height=200`;
    assert.equal(
      await curl('-o', join(dir, 'a.webp'), '-w', '%{http_code}', '--etag-save', etags, url),
      '200',
    );
    assert.equal(
      await curl('-o', join(dir, 'b.webp'), '-w', '%{http_code}', '--etag-compare', etags, url),
      '304',
    );
  });

  it('reports bad input as 400 JSON in the v1 envelope', async () => {
    const body = await curl('-w', '\n%{http_code}', `${srv.url}/rest/api/v1/image?width=0`);
    const [json, code] = body.split('\n');
    assert.equal(code, '400');
    assert.deepEqual(Object.keys(JSON.parse(json!)).sort(), ['data', 'message', 'status']);
  });
});

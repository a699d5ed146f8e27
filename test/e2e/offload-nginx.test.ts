// devutil behind real nginx with X-Accel-Redirect (the offload block of deploy/nginx.conf): nginx
// sends the stored bytes, devutil decides and sets the headers; curl checks what a client gets.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { brotliDecompressSync } from 'node:zlib';
import { curl as curlArgs } from '../fixtures/proxy/curl.ts';
import { type Nginx, offloadLocations, startNginx } from '../helpers/nginx.ts';
import { type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const run = promisify(execFile);
const curl = (url: string, args: string[] = []) => curlArgs([...args, url]);

const h = (g: { headers: Record<string, string> }, name: string) => g.headers[name];

function textCorpus(lines = 3000): Buffer {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(`2026-11-21T10:00:00Z INFO req=${i * 7919} path=/items/${i % 97}`);
  return Buffer.from(`${out.join('\n')}\n`);
}

async function upload(base: string, key: string, body: Buffer, name: string) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(body)]), name);
  const res = await fetch(`${base}/api/file/${key}`, { method: 'POST', body: form });
  assert.equal(res.status, 200, await res.text());
}

describe('file downloads offloaded to nginx (X-Accel-Redirect)', { skip: toolSkip('nginx', ['-v']) }, () => {
  let srv: Running;
  let nginx: Nginx;
  let dataDir: string;
  const binary = randomBytes(3 * 1024 * 1024 + 17);
  const text = textCorpus();

  before(async () => {
    dataDir = tempDir();
    // nginx's workers run as another user (nobody when started by root): like a deployment, the
    // data directory must let them read blobs/.data.
    chmodSync(dataDir, 0o755);
    srv = await startTestServer({
      overrides: {
        server: { dataDir },
        files: { accelRedirect: '/_devutil_files/', rateLimit: 'off' },
      },
    });
    nginx = await startNginx(
      `${offloadLocations(dataDir)}
    location / {
      proxy_pass http://devutil;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_buffering off;
    }`,
      `upstream devutil { server 127.0.0.1:${srv.port}; keepalive 8; }`,
      { readyPath: '/healthz' },
    );
    await upload(srv.url, 'blob.bin', binary, 'random data.bin');
    await upload(srv.url, 'log.txt', text, 'build log ✓.txt');
  });
  after(async () => {
    await nginx?.close();
    await srv?.close();
  });

  it('devutil answers with X-Accel-Redirect and no body; through nginx the download is byte-identical with devutil headers', async () => {
    const direct = await curl(`${srv.url}/api/file/blob.bin`);
    assert.equal(direct.status, 200);
    assert.match(h(direct, 'x-accel-redirect') ?? '', /^\/_devutil_files\/[0-9a-f]{2}\/[0-9a-f]{32}$/);
    assert.equal(direct.body.length, 0);

    const got = await curl(`${nginx.url}/api/file/blob.bin`);
    assert.equal(got.status, 200, nginx.errors());
    assert.ok(got.body.equals(binary), 'the bytes nginx sent are the upload');
    assert.equal(h(got, 'x-accel-redirect'), undefined, 'nginx keeps the internal path to itself');
    assert.equal(h(got, 'content-length'), String(binary.length));
    for (const name of [
      'etag',
      'last-modified',
      'content-type',
      'content-disposition',
      'content-security-policy',
      'x-content-type-options',
      'cache-control',
    ])
      assert.deepEqual(got.headers[name], direct.headers[name], name);
    assert.match(h(got, 'etag') ?? '', /^"[0-9a-f]{32}"$/, 'the ETag is devutil`s, not the file`s');
    assert.equal(h(got, 'content-disposition'), 'attachment; filename="random data.bin"');
    assert.equal(h(got, 'accept-ranges'), 'bytes');
    assert.ok(h(got, 'x-request-id'));
  });

  it('answers a Range through nginx with exactly those bytes, and If-Range with devutil`s ETag', async () => {
    const got = await curl(`${nginx.url}/api/file/blob.bin`, ['-r', '1000-200999']);
    assert.equal(got.status, 206, nginx.errors());
    assert.equal(h(got, 'content-range'), `bytes 1000-200999/${binary.length}`);
    assert.ok(got.body.equals(binary.subarray(1000, 201000)));
    const tail = await curl(`${nginx.url}/api/file/blob.bin`, ['-r', '-100']);
    assert.ok(tail.body.equals(binary.subarray(binary.length - 100)));
    const etag = h(await curl(`${srv.url}/api/file/blob.bin`, ['-I']), 'etag') ?? '';
    assert.match(etag, /^"[0-9a-f]{32}"$/);
    assert.equal(h(got, 'etag'), etag);
    const fresh = await curl(`${nginx.url}/api/file/blob.bin`, ['-r', '0-9', '-H', `If-Range: ${etag}`]);
    assert.equal(fresh.status, 206);
    const stale = await curl(`${nginx.url}/api/file/blob.bin`, ['-r', '0-9', '-H', 'If-Range: "other"']);
    assert.equal(stale.status, 200);
    assert.ok(stale.body.equals(binary));
  });

  it('answers conditional requests itself: 304 for its own ETag and date', async () => {
    const first = await curl(`${nginx.url}/api/file/blob.bin`, ['-I']);
    const inm = await curl(`${nginx.url}/api/file/blob.bin`, ['-H', `If-None-Match: ${h(first, 'etag')}`]);
    assert.equal(inm.status, 304);
    const ims = await curl(`${nginx.url}/api/file/blob.bin`, [
      '-H',
      `If-Modified-Since: ${h(first, 'last-modified')}`,
    ]);
    assert.equal(ims.status, 304);
    const head = await curl(`${nginx.url}/api/file/blob.bin`, ['-I']);
    assert.equal(h(head, 'content-length'), String(binary.length));
  });

  it('offloads a stored-brotli file to a client that takes br, and serves decoded bytes itself otherwise', async () => {
    const br = await curl(`${nginx.url}/api/file/log.txt`, ['-H', 'Accept-Encoding: br']);
    assert.equal(br.status, 200, nginx.errors());
    assert.equal(h(br, 'content-encoding'), 'br');
    assert.equal(h(br, 'vary'), 'accept-encoding');
    assert.ok(br.body.length < text.length / 2, 'the stored (compressed) bytes');
    assert.ok(brotliDecompressSync(br.body).equals(text));
    const directBr = await curl(`${srv.url}/api/file/log.txt`, ['-H', 'Accept-Encoding: br']);
    assert.ok(h(directBr, 'x-accel-redirect'), 'offloaded');
    assert.equal(h(directBr, 'etag'), h(br, 'etag'));

    const plain = await curl(`${nginx.url}/api/file/log.txt`);
    assert.equal(plain.status, 200);
    assert.equal(h(plain, 'content-encoding'), undefined);
    assert.ok(plain.body.equals(text), 'decoded by devutil');
    const directPlain = await curl(`${srv.url}/api/file/log.txt`);
    assert.equal(h(directPlain, 'x-accel-redirect'), undefined, 'not offloaded: nginx cannot decode');
    assert.ok(directPlain.body.equals(text));

    // A range of a compressed file addresses the decoded bytes: devutil's work, br or not.
    const part = await curl(`${nginx.url}/api/file/log.txt`, ['-H', 'Accept-Encoding: br', '-r', '100-199']);
    assert.equal(part.status, 206);
    assert.equal(h(part, 'content-encoding'), undefined);
    assert.ok(part.body.equals(text.subarray(100, 200)));
    assert.equal(h(br, 'content-disposition'), h(directBr, 'content-disposition'));
    // curl -OJ saves the offloaded download under its original (Unicode) name.
    const dir = tempDir();
    await run('curl', ['-sS', '-OJ', '--compressed', `${nginx.url}/api/file/log.txt`], { cwd: dir });
    assert.deepEqual(readdirSync(dir), ['build log ✓.txt']);
    assert.ok(readFileSync(join(dir, 'build log ✓.txt')).equals(text));
  });

  it('refuses the internal prefix to clients with 404', async () => {
    const direct = await curl(`${srv.url}/api/file/blob.bin`);
    const location = h(direct, 'x-accel-redirect') ?? '';
    assert.ok(location);
    const got = await curl(`${nginx.url}${location}`);
    assert.equal(got.status, 404);
    assert.ok(!got.body.equals(binary));
    const listing = await curl(`${nginx.url}/_devutil_files/`);
    assert.equal(listing.status, 404);
  });
});

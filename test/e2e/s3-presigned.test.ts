// S3 backend with presigned downloads: devutil answers 302 to a short-lived URL of a real
// S3-compatible server (s3rver), curl -L follows it; the URL is a secret that never reaches the logs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { brotliDecompressSync } from 'node:zlib';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { curl as curlArgs } from '../fixtures/proxy/curl.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const run = promisify(execFile);
const curl = (url: string, args: string[] = []) => curlArgs([...args, url]);

async function upload(base: string, key: string, body: Buffer, name: string, type?: string) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(body)], type ? { type } : {}), name);
  const res = await fetch(`${base}/api/file/${key}`, { method: 'POST', body: form });
  assert.equal(res.status, 200, await res.text());
}

/** The presigned URL devutil redirects to, its signature registered for the run's log scan. */
async function location(base: string, key: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${base}/api/file/${key}`, { headers, redirect: 'manual' });
  await res.arrayBuffer();
  assert.equal(res.status, 302);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const url = res.headers.get('location') ?? '';
  const sig = new URL(url).searchParams.get('X-Amz-Signature');
  assert.ok(sig, url);
  registerSecret(sig);
  return url;
}

const text = Buffer.from(
  Array.from({ length: 3000 }, (_, i) => `line ${i}: status=${i % 5 ? 200 : 404} path=/x/${i % 97}`).join(
    '\n',
  ),
);

describe('S3 presigned downloads', { skip: toolSkip('curl') }, () => {
  let s3: S3Handle;
  let srv: Running;
  const logs = new LogCapture();
  const binary = randomBytes(2 * 1024 * 1024 + 3);

  before(async () => {
    s3 = await startS3();
    srv = await startTestServer({
      logs,
      overrides: {
        storage: { ...s3.overrides, s3PresignedDownloads: true },
        files: { rateLimit: 'off' },
      },
    });
    await upload(srv.url, 'blob.bin', binary, 'random data.bin', 'application/x-demo');
    await upload(srv.url, 'log.txt', text, 'build log ✓.txt');
  });
  after(async () => {
    await srv?.close();
    await s3?.close();
  });

  it('redirects to a presigned S3 URL that curl -L follows to byte-identical content, name and type', async () => {
    const url = await location(srv.url, 'blob.bin');
    assert.ok(url.startsWith(`${s3.endpoint}/${s3.bucket}/files/blob.bin?`), url);
    const got = await curl(`${srv.url}/api/file/blob.bin`, ['-L']);
    assert.equal(got.status, 200);
    assert.ok(got.body.equals(binary));
    assert.equal(got.headers['content-type'], 'application/x-demo');
    assert.equal(got.headers['content-disposition'], 'attachment; filename="random data.bin"');
    const dir = tempDir();
    await run('curl', ['-sS', '-L', '-OJ', `${srv.url}/api/file/blob.bin`], { cwd: dir });
    assert.deepEqual(readdirSync(dir), ['random data.bin']);
    assert.ok(readFileSync(join(dir, 'random data.bin')).equals(binary));
  });

  it('answers a Range through the redirect with exactly those bytes', async () => {
    const got = await curl(`${srv.url}/api/file/blob.bin`, ['-L', '-r', '1000-70999']);
    assert.equal(got.status, 206);
    assert.equal(got.headers['content-range'], `bytes 1000-70999/${binary.length}`);
    assert.ok(got.body.equals(binary.subarray(1000, 71000)));
  });

  it('redirects a stored-brotli file only for a client that takes br; others get decoded bytes from devutil', async () => {
    await location(srv.url, 'log.txt', { 'accept-encoding': 'br' });
    const br = await curl(`${srv.url}/api/file/log.txt`, ['-L', '-H', 'Accept-Encoding: br']);
    assert.equal(br.status, 200);
    assert.equal(br.headers['content-encoding'], 'br');
    assert.ok(brotliDecompressSync(br.body).equals(text));
    assert.match(br.headers['content-disposition'] ?? '', /filename\*=UTF-8''build%20log%20%E2%9C%93\.txt/);

    const plain = await fetch(`${srv.url}/api/file/log.txt`, { redirect: 'manual' });
    assert.equal(plain.status, 200, 'served by devutil, not redirected');
    assert.ok(Buffer.from(await plain.arrayBuffer()).equals(text));
    const part = await fetch(`${srv.url}/api/file/log.txt`, {
      redirect: 'manual',
      headers: { 'accept-encoding': 'br', range: 'bytes=10-19' },
    });
    assert.equal(part.status, 206, 'a range of the decoded bytes is devutil`s');
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(text.subarray(10, 20)));
  });

  it('answers HEAD and conditional requests itself', async () => {
    const head = await fetch(`${srv.url}/api/file/blob.bin`, { method: 'HEAD', redirect: 'manual' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(binary.length));
    const etag = head.headers.get('etag') ?? '';
    const cond = await fetch(`${srv.url}/api/file/blob.bin`, {
      redirect: 'manual',
      headers: { 'if-none-match': etag },
    });
    assert.equal(cond.status, 304);
  });

  it('keeps presigned URLs out of the logs', async () => {
    const url = await location(srv.url, 'blob.bin');
    const sig = new URL(url).searchParams.get('X-Amz-Signature') ?? '';
    assert.ok(logs.lines.length > 0);
    assert.ok(!logs.text().includes(sig));
    assert.ok(!logs.text().includes('X-Amz-Credential'));
  });
});

describe('S3 presigned URL expiry', () => {
  it('a URL signed for 1 s is refused by S3 with 403 two seconds later', async () => {
    const s3 = await startS3();
    const srv = await startTestServer({
      overrides: { storage: { ...s3.overrides, s3PresignedDownloads: true, s3PresignExpirySec: 1 } },
    });
    try {
      await upload(srv.url, 'short.bin', randomBytes(1000), 'short.bin');
      const url = await location(srv.url, 'short.bin');
      assert.equal(new URL(url).searchParams.get('X-Amz-Expires'), '1');
      await new Promise((r) => setTimeout(r, 2100));
      const res = await fetch(url);
      const body = await res.text();
      assert.equal(res.status, 403);
      assert.match(body, /expired/i);
    } finally {
      await srv.close();
      await s3.close();
    }
  });
});

// File lifetimes and resumable uploads across two devutil processes sharing one S3 bucket (s3rver)
// and one Redis: a Max-Downloads: 1 file downloaded through A is gone on B, a tus upload cut on A
// resumes on B (raw HTTP and tus-js-client), and a PATCH on A holds the upload against B (423).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as tus from 'tus-js-client';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { create, cutPatch, cuttingRelay, decodeResult, patch, sample } from '../helpers/tus.ts';

const run = promisify(execFile);
const T = { 'tus-resumable': '1.0.0' };

describe('two instances sharing S3 and Redis: lifetimes and resumable uploads', {
  skip: toolSkip('redis-server') || toolSkip('curl'),
}, () => {
  let redis: RedisHandle;
  let s3: S3Handle;
  let a: DevutilProcess;
  let b: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    s3 = await startS3();
    const o = s3.overrides;
    const env = {
      DEVUTIL_REDIS_URL: redis.url,
      DEVUTIL_STORAGE_BACKEND: 's3',
      DEVUTIL_STORAGE_S3_ENDPOINT: String(o['s3Endpoint']),
      DEVUTIL_STORAGE_S3_BUCKET: String(o['s3Bucket']),
      DEVUTIL_STORAGE_S3_REGION: String(o['s3Region']),
      DEVUTIL_STORAGE_S3_ACCESS_KEY_ID: String(o['s3AccessKeyId']),
      DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY: String(o['s3SecretAccessKey']),
      DEVUTIL_STORAGE_S3_FORCE_PATH_STYLE: 'true',
      DEVUTIL_FILES_UPLOAD_LOCK_WAIT_MS: '3000',
    };
    [a, b] = await startAll([startDevutilProcess(env), startDevutilProcess(env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await s3?.close();
    await redis?.stop();
  });
  const key = () => `shared-${randomBytes(5).toString('hex')}`;

  it('serves a Max-Downloads: 1 file once through A, then answers 404 through B', async () => {
    const file = join(tempDir(), 'once.txt');
    writeFileSync(file, 'read me once\n');
    const k = key();
    const { stdout } = await run('curl', [
      '-s',
      '-H',
      'Max-Downloads: 1',
      '-F',
      `file=@${file}`,
      `${a.url}/api/file/${k}`,
    ]);
    const up = JSON.parse(stdout);
    assert.deepEqual(up.data.lifetime, { max_downloads: 1, max_days: null, expires_at: null });
    // HEAD on either instance does not count.
    assert.equal((await fetch(`${b.url}/api/file/${k}`, { method: 'HEAD' })).status, 200);
    const first = await fetch(`${a.url}/api/file/${k}`);
    assert.equal(first.status, 200);
    assert.equal(await first.text(), 'read me once\n');
    const second = await fetch(`${b.url}/api/file/${k}`);
    assert.equal(second.status, 404);
    assert.deepEqual(await second.json(), { success: false, message: 'no file with this key' });
    assert.equal((await fetch(`${a.url}/api/file/${k}`)).status, 404);
  });

  it('resumes on B a tus upload cut on A, ending with the exact 2.1 JSON and the same bytes', async () => {
    const body = sample(2_000_000);
    const k = key();
    const created = await create(a.url, body.length, { key: k, filename: 'big.log', filetype: 'text/plain' });
    assert.equal(created.status, 201);
    const path = created.headers.get('location') ?? '';
    await cutPatch(`${a.url}${path}`, 0, body, 800_000);
    // B waits for A to store what arrived (the shared lock), then reports it.
    const head = await fetch(`${b.url}${path}`, { method: 'HEAD', headers: T });
    assert.equal(head.status, 200);
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset > 0 && offset <= 800_000, String(offset));
    const done = await patch(`${b.url}${path}`, offset, body.subarray(offset));
    assert.equal(done.status, 204, await done.text());
    const result = decodeResult(done);
    // The reference: a plain multipart upload of the same bytes.
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(body)], { type: 'text/plain' }), 'big.log');
    const ref = await (await fetch(`${b.url}/api/file/ref-${k}`, { method: 'POST', body: form })).json();
    assert.deepEqual(result, { ...ref, data: { ...ref.data, key: k } });
    assert.equal(await (await fetch(`${a.url}${path}`)).text(), JSON.stringify(result));
    const got = await fetch(`${a.url}/api/file/${k}`);
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), body);
  });

  it('holds an upload for the PATCH writing it on A: B answers 423 meanwhile', async () => {
    const body = sample(100_000);
    const created = await create(a.url, body.length, { key: key() });
    const path = created.headers.get('location') ?? '';
    const req = request(`${a.url}${path}`, {
      method: 'PATCH',
      headers: {
        ...T,
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
        'content-length': String(body.length),
      },
    });
    req.on('error', () => {});
    req.write(body.subarray(0, 1000));
    // Once A holds the upload (from the PATCH's headers on), B turns requests away.
    let status = 0;
    for (let i = 0; i < 200 && status !== 423; i++) {
      status = (await fetch(`${b.url}${path}`, { method: 'HEAD', headers: T })).status;
      if (status !== 423) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status, 423);
    assert.equal((await patch(`${b.url}${path}`, 0, body.subarray(0, 10))).status, 423);
    req.destroy();
  });

  it('lets tus-js-client resume on B an upload it started on A', async () => {
    const body = sample(3_000_000);
    const k = key();
    const options = {
      metadata: { key: k, filename: 'client.log', filetype: 'text/plain' },
      retryDelays: [0, 200, 500],
    };
    // First run through a relay that cuts the connection after 1 MB, as a dropped network does.
    const relay = await cuttingRelay(a.port, 1_000_000);
    const url = await new Promise<string>((resolve, reject) => {
      const up: tus.Upload = new tus.Upload(body, {
        ...options,
        endpoint: `${relay.url}/api/upload/`,
        retryDelays: [],
        onError: () => resolve(up.url ?? ''),
        onSuccess: () => reject(new Error('finished through a cut connection')),
      });
      up.start();
    });
    await relay.close();
    assert.match(url, /\/api\/upload\/[0-9a-f]{32}$/);
    const onB = url.replace(relay.url, b.url);
    const head = await fetch(onB, { method: 'HEAD', headers: T });
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset > 0 && offset < body.length, String(offset));
    const result = await new Promise<unknown>((resolve, reject) => {
      const up = new tus.Upload(body, {
        ...options,
        uploadUrl: onB,
        onError: reject,
        onSuccess: (p) =>
          resolve(
            JSON.parse(Buffer.from(p.lastResponse.getHeader('X-Upload-Result') ?? '', 'base64').toString()),
          ),
      });
      up.start();
    });
    assert.deepEqual(result, await (await fetch(onB)).json());
    assert.equal((result as { data: { key: string } }).data.key, k);
    const got = await fetch(`${b.url}/api/file/${k}`);
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), body);
  });
});

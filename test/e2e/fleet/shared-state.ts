// State two instances share through Redis and one S3 bucket, as cases of the fleet
// (test/e2e/fleet.test.ts): an avatar uploaded, replaced and deleted through one shows on the other
// at once (Redis pub/sub); a Max-Downloads: 1 file downloaded through A is gone on B; a tus upload
// cut on A resumes on B (raw HTTP and tus-js-client); a PATCH on A holds the upload against B (423).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import * as tus from 'tus-js-client';
import type { DevutilProcess } from '../../helpers/process.ts';
import { testSecret } from '../../helpers/secrets.ts';
import { tempDir } from '../../helpers/server.ts';
import { create, cutPatch, cuttingRelay, decodeResult, patch, sample } from '../../helpers/tus.ts';
import { waitFor } from '../../helpers/wait.ts';

const run = promisify(execFile);
const T = { 'tus-resumable': '1.0.0' };
const ADMIN = testSecret('avatar-admin-');

/** What these cases need of the instances' configuration. */
export const STATE_ENV = {
  DEVUTIL_AVATAR_ADMIN_TOKEN: ADMIN,
  // Each instance remembers a lookup for an hour: only the Redis announcement can make a change
  // made on A visible on B while the test runs.
  DEVUTIL_AVATAR_LOOKUP_TTL_SEC: '3600',
  DEVUTIL_AVATAR_UPSTREAM: 'none',
  DEVUTIL_FILES_UPLOAD_LOCK_WAIT_MS: '3000',
};

/** Polls `url` until `ok` holds, for at most `ms`, and returns the last answer. */
async function within(ms: number, url: string, ok: (r: Response) => boolean, headers = {}) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await fetch(url, { headers });
    if (ok(r) || Date.now() >= end) return r;
    await r.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const png = (background: string) =>
  sharp({ create: { width: 64, height: 64, channels: 3, background } })
    .png()
    .toBuffer();
const putAvatar = (base: string, md5: string, body: Buffer, email?: string) =>
  fetch(`${base}/avatar/${md5}`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${ADMIN}`,
      'content-type': 'image/png',
      ...(email ? { 'x-avatar-email': email } : {}),
    },
    body: new Uint8Array(body),
  });

/** The cases, on the instances `get` gives once the fleet is up. */
export function sharedStateCases(get: () => { a: DevutilProcess; b: DevutilProcess }): void {
  // unavatar#292, weblate#1192: an upload or delete shows on every instance at once (Redis pub/sub),
  // though B has just looked the hash up and would otherwise remember that for an hour. How soon is
  // a figure for a quiet machine; here the deadline only tells a lost announcement from a slow one.
  it('shows an avatar uploaded, replaced and deleted through one instance on the other', async () => {
    const { a, b } = get();
    const email = 'scale@example.com';
    const md5 = createHash('md5').update(email).digest('hex');
    const url = `${b.url}/avatar/${md5}?d=404&s=32`;
    assert.equal((await fetch(url)).status, 404);
    const put = await putAvatar(a.url, md5, await png('#3366cc'), email);
    assert.equal(put.status, 201, await put.text());
    const got = await within(30_000, url, (r) => r.status === 200);
    assert.equal(got.status, 200, 'visible on B after the upload');
    const first = Buffer.from(await got.arrayBuffer());
    const meta = await sharp(first).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 32, 32]);
    const etag = got.headers.get('etag')!;
    assert.match(got.headers.get('cache-control') ?? '', /max-age=\d+, must-revalidate/);

    // Revalidation: 304 while unchanged, then 200 with a new ETag once A replaced the image.
    const same = await fetch(url, { headers: { 'if-none-match': etag } });
    assert.equal(same.status, 304);
    assert.equal((await putAvatar(a.url, md5, await png('#cc3333'))).status, 201);
    const changed = await within(30_000, url, (r) => r.status === 200, { 'if-none-match': etag });
    assert.equal(changed.status, 200, 'the replacement is visible on B');
    assert.notEqual(changed.headers.get('etag'), etag);
    const { data } = await sharp(Buffer.from(await changed.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    assert.ok(data[0]! > 150 && data[2]! < 100, 'B serves the new red image');

    const del = await fetch(`${a.url}/avatar/${md5}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(del.status, 204);
    const gone = await within(30_000, url, (r) => r.status === 404);
    assert.equal(gone.status, 404, 'the deletion is visible on B');
  });

  const key = () => `shared-${randomBytes(5).toString('hex')}`;

  it('serves a Max-Downloads: 1 file once through A, then answers 404 through B', async () => {
    const { a, b } = get();
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
    const { a, b } = get();
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
    const { a, b } = get();
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
    const { a, b } = get();
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
    // A records what the cut PATCH delivered once it notices the cut: on a busy machine B can be
    // asked first (offset 0, or 423 while A still holds the upload), so ask until it shows.
    let offset = 0;
    await waitFor(async () => {
      const head = await fetch(onB, { method: 'HEAD', headers: T });
      offset = Number(head.headers.get('upload-offset'));
      return offset > 0;
    }, 'the offset A stored to show on B').catch(() => {});
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
}

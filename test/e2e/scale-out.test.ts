// Several instances on real infrastructure: two devutil processes sharing one Redis (rate limits)
// and one S3 bucket (files), and cluster mode (--workers 2) on one machine under the same checks.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { testSecret } from '../helpers/secrets.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const run = promisify(execFile);
const ADMIN = testSecret('avatar-admin-');

function s3Env(s3: S3Handle): Record<string, string> {
  const o = s3.overrides;
  return {
    DEVUTIL_STORAGE_BACKEND: 's3',
    DEVUTIL_STORAGE_S3_ENDPOINT: String(o['s3Endpoint']),
    DEVUTIL_STORAGE_S3_BUCKET: String(o['s3Bucket']),
    DEVUTIL_STORAGE_S3_REGION: String(o['s3Region']),
    DEVUTIL_STORAGE_S3_ACCESS_KEY_ID: String(o['s3AccessKeyId']),
    DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY: String(o['s3SecretAccessKey']),
    DEVUTIL_STORAGE_S3_FORCE_PATH_STYLE: 'true',
  };
}

async function upload(base: string, key: string, file: string, token?: string) {
  const args = ['-s', '-o', '-', '-D', '-', '-F', `file=@${file};type=text/plain`, `${base}/api/file/${key}`];
  if (token) args.unshift('-H', `X-Owner-Token: ${token}`);
  const { stdout } = await run('curl', args);
  const [head = '', body = ''] = stdout.split('\r\n\r\n');
  const status = Number(/^HTTP\/[\d.]+ (\d+)/.exec(head)?.[1]);
  const owner = /^x-owner-token: (.+)$/im.exec(head)?.[1]?.trim();
  return { status, owner, json: JSON.parse(body) };
}

async function statuses(urls: string[]): Promise<number[]> {
  const out = [];
  for (const u of urls) out.push((await fetch(u)).status);
  return out;
}

/** The checks both topologies must pass: `a` and `b` may be the same address (cluster mode). */
function sharedChecks(name: string, get: () => { a: string; b: string }) {
  it(`${name}: uploads through one address and downloads byte-identical through the other`, async () => {
    const { a, b } = get();
    const dir = tempDir();
    const file = join(dir, 'notes.txt');
    const content = `${'scale out line\n'.repeat(5000)}${randomBytes(8).toString('hex')}`;
    writeFileSync(file, content);
    const key = `k-${randomBytes(4).toString('hex')}`;
    const up = await upload(a, key, file);
    assert.equal(up.status, 200, JSON.stringify(up.json));
    assert.equal(up.json.data.file_info.compressed, true);
    assert.ok(up.owner);
    const dl = tempDir();
    await run('curl', ['-s', '-f', '-OJ', `${b}/api/file/${key}`], { cwd: dl });
    assert.equal(readFileSync(join(dl, 'notes.txt'), 'utf8'), content);

    // The owner token works across instances, and a stranger cannot overwrite.
    writeFileSync(file, 'replacement');
    assert.equal((await upload(b, key, file)).status, 409);
    assert.equal((await fetch(`${a}/api/file/${key}`).then((r) => r.text())).length, content.length);
    assert.equal((await upload(b, key, file, up.owner)).status, 200);
    assert.equal(await fetch(`${a}/api/file/${key}`).then((r) => r.text()), 'replacement');
  });

  it(`${name}: shares one rate-limit budget`, async () => {
    const { a, b } = get();
    // The IP budget is 3 per minute per client; the 4th request, on either address, is refused.
    const got = await statuses([
      `${a}/rest/api/v1/ip`,
      `${b}/rest/api/v1/ip`,
      `${a}/rest/api/v1/ip`,
      `${b}/rest/api/v1/ip`,
    ]);
    assert.deepEqual(got, [200, 200, 200, 429]);
  });
}

describe('two instances on one Redis and one S3 bucket', {
  skip: toolSkip('redis-server') || toolSkip('curl'),
}, () => {
  let redis: RedisHandle;
  let s3: S3Handle;
  let a: DevutilProcess;
  let b: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    s3 = await startS3();
    const env = {
      DEVUTIL_REDIS_URL: redis.url,
      DEVUTIL_IP_RATE_LIMIT: '3/min',
      DEVUTIL_AVATAR_ADMIN_TOKEN: ADMIN,
      // Each instance remembers a lookup for an hour: only the Redis announcement can make a change
      // made on A visible on B while the test runs.
      DEVUTIL_AVATAR_LOOKUP_TTL_SEC: '3600',
      DEVUTIL_AVATAR_UPSTREAM: 'none',
      ...s3Env(s3),
    };
    [a, b] = await startAll([startDevutilProcess(env), startDevutilProcess(env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await s3?.close();
    await redis?.stop();
  });
  sharedChecks('two instances', () => ({ a: a.url, b: b.url }));

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

  // unavatar#292, weblate#1192: an upload or delete shows on every instance at once (Redis pub/sub),
  // though B has just looked the hash up and would otherwise remember that for an hour. How soon is
  // a figure for a quiet machine; here the deadline only tells a lost announcement from a slow one.
  it('shows an avatar uploaded, replaced and deleted through one instance on the other', async () => {
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
});

describe('cluster mode (--workers 2) with Redis', {
  skip: toolSkip('redis-server') || toolSkip('curl'),
}, () => {
  let redis: RedisHandle;
  let c: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    c = await startDevutilProcess({ DEVUTIL_REDIS_URL: redis.url, DEVUTIL_IP_RATE_LIMIT: '3/min' }, [
      '--workers',
      '2',
    ]);
  });
  after(async () => {
    assert.equal(await c?.stop(), 0);
    await redis?.stop();
  });
  sharedChecks('cluster', () => ({ a: c.url, b: c.url }));
});

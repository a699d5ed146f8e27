// The files quota under concurrency, with devutil as users run it: parallel uploads never store
// more than the quota, with a declared Content-Length (refused before the body is read) or streamed
// chunked (reserved as bytes arrive), on one instance, on two cluster workers, and on two instances
// sharing one Redis and one S3 bucket. Refused uploads leave nothing behind and no space reserved.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { toolSkip } from '../helpers/tools.ts';

const QUOTA = 1024 * 1024;
const env = { DEVUTIL_FILES_QUOTA_BYTES: String(QUOTA), DEVUTIL_FILES_RATE_LIMIT: 'off' };

interface Result {
  key: string;
  status: number;
  body: string;
  token: string;
}

/** A multipart upload with Content-Length (fetch computes it for a FormData of Blobs). */
async function declared(base: string, key: string, size: number): Promise<Result> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(randomBytes(size))]), 'data.bin');
  const res = await fetch(`${base}/api/file/${key}`, { method: 'POST', body: form });
  return { key, status: res.status, body: await res.text(), token: res.headers.get('x-owner-token') ?? '' };
}

/** A multipart upload sent chunked in 32 KiB pieces, so the server never knows its length up front. */
function chunked(base: string, key: string, size: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const boundary = 'quotaBOUNDARY';
    const req = request(`${base}/api/file/${key}`, {
      method: 'POST',
      agent: false,
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () =>
        resolve({
          key,
          status: res.statusCode ?? 0,
          body,
          token: String(res.headers['x-owner-token'] ?? ''),
        }),
      );
    });
    // An early refusal may reset the rest of the upload: only a missing answer is a failure.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="data.bin"\r\n\r\n`);
    const data = randomBytes(size);
    let off = 0;
    const pump = () => {
      while (off < size && !answered) {
        const piece = data.subarray(off, off + 32 * 1024);
        off += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!answered) req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

/** What each key holds now (0 = nothing), read through `base`. */
async function storedSizes(base: string, keys: string[]): Promise<number[]> {
  return Promise.all(
    keys.map(async (k) => {
      const r = await fetch(`${base}/api/file/${k}`, { method: 'HEAD' });
      return r.status === 200 ? Number(r.headers.get('content-length')) : 0;
    }),
  );
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/** Runs `n` uploads at once, spread over the addresses; checks the quota held; deletes what was stored. */
async function race(
  bases: string[],
  n: number,
  size: number,
  send: (base: string, key: string, size: number) => Promise<Result>,
): Promise<Result[]> {
  const tag = randomBytes(3).toString('hex');
  const keys = Array.from({ length: n }, (_, i) => `q-${tag}-${i}`);
  const results = await Promise.all(keys.map((k, i) => send(bases[i % bases.length] ?? '', k, size)));
  for (const r of results) {
    assert.ok(r.status === 200 || r.status === 507, `${r.key}: ${r.status} ${r.body}`);
    if (r.status === 507)
      assert.deepEqual(JSON.parse(r.body), { success: false, message: 'storage quota of 1 MiB is full' });
  }
  const sizes = await storedSizes(bases[0] ?? '', keys);
  const total = sizes.reduce((a, b) => a + b, 0);
  assert.ok(total <= QUOTA, `stored ${total} bytes under a quota of ${QUOTA}`);
  assert.deepEqual(
    sizes.map((s) => s > 0),
    results.map((r) => r.status === 200),
    'exactly the accepted uploads are stored',
  );
  for (const b of bases)
    assert.equal(await metric(b, 'devutil_files_reserved_bytes'), 0, 'no space left reserved');
  for (const r of results) {
    if (r.status !== 200) continue;
    const del = await fetch(`${bases[0]}/api/file/${r.key}`, {
      method: 'DELETE',
      headers: { 'x-owner-token': r.token },
    });
    assert.equal(del.status, 200);
  }
  return results;
}

const accepted = (rs: Result[]) => rs.filter((r) => r.status === 200).length;

describe('files quota on one instance', () => {
  let p: DevutilProcess;
  before(async () => {
    p = await startDevutilProcess(env);
  });
  after(() => p?.stop());

  it('stores one of 8 parallel 900 KB uploads with Content-Length under a 1 MiB quota', async () => {
    assert.equal(accepted(await race([p.url], 8, 900_000, declared)), 1);
  });

  it('keeps 8 parallel chunked 300 KB uploads under the quota', async () => {
    await race([p.url], 8, 300_000, chunked);
  });

  it('has the space back after the deletes', async () => {
    assert.equal(await metric(p.url, 'devutil_files_stored_bytes'), 0);
    assert.equal(accepted(await race([p.url], 3, 300_000, declared)), 3);
  });
});

describe('files quota on two cluster workers sharing Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  let p: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    p = await startDevutilProcess({ ...env, DEVUTIL_REDIS_URL: redis.url }, ['--workers', '2']);
  });
  after(async () => {
    await p?.stop();
    await redis?.stop();
  });

  it('stores one of 8 parallel 900 KB uploads', async () => {
    assert.equal(accepted(await race([p.url], 8, 900_000, declared)), 1);
  });
});

describe('files quota on two instances sharing Redis and S3', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  let s3: S3Handle;
  let a: DevutilProcess;
  let b: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    s3 = await startS3();
    const shared = { ...env, ...s3.env, DEVUTIL_REDIS_URL: redis.url };
    [a, b] = await startAll([startDevutilProcess(shared), startDevutilProcess(shared)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await s3?.close();
    await redis?.stop();
  });

  it('stores one of 8 parallel 900 KB uploads spread over both', async () => {
    assert.equal(accepted(await race([a.url, b.url], 8, 900_000, declared)), 1);
  });

  it('keeps 8 parallel chunked uploads spread over both under the quota', async () => {
    await race([a.url, b.url], 8, 300_000, chunked);
  });
});

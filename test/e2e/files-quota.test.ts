// The files quota under concurrency, with devutil as users run it: parallel uploads never store
// more than the quota, with a declared Content-Length (refused before the body is read) or streamed
// chunked (reserved as bytes arrive), on one instance and on two cluster workers (two instances
// sharing one Redis and one S3 bucket: test/e2e/fleet.test.ts). Refused uploads leave nothing behind
// and no space reserved.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { accepted, chunked, declared, metric, race } from '../helpers/quota-race.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { toolSkip } from '../helpers/tools.ts';

const QUOTA = 1024 * 1024;
const env = { DEVUTIL_FILES_QUOTA_BYTES: String(QUOTA), DEVUTIL_FILES_RATE_LIMIT: 'off' };

describe('files quota on one instance', { timeout: 180_000 }, () => {
  let p: DevutilProcess;
  before(async () => {
    p = await startDevutilProcess(env);
  });
  after(() => p?.stop());

  it('stores one of 8 parallel 900 KB uploads with Content-Length under a 1 MiB quota', async () => {
    assert.equal(accepted(await race(QUOTA, [p.url], 8, 900_000, declared)), 1);
  });

  it('keeps 8 parallel chunked 300 KB uploads under the quota', async () => {
    await race(QUOTA, [p.url], 8, 300_000, chunked);
  });

  it('has the space back after the deletes', async () => {
    assert.equal(await metric(p.url, 'devutil_files_stored_bytes'), 0);
    assert.equal(accepted(await race(QUOTA, [p.url], 3, 300_000, declared)), 3);
  });
});

describe('files quota on two cluster workers sharing Redis', {
  skip: toolSkip('redis-server'),
  timeout: 180_000,
}, () => {
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
    assert.equal(accepted(await race(QUOTA, [p.url], 8, 900_000, declared)), 1);
  });
});

// The fleet: devutil as it scales out, two processes on one real Redis and one S3-compatible server
// (s3rver), started once for every multi-instance case instead of once per file. Two groups of two
// processes run at the same time, each on a Redis server and an S3 bucket of its own (what one group
// leaves behind is never the other's to count, and the quota group's Redis outage is not the other
// group's): the state instances share without a quota (fleet/checks.ts, fleet/shared-state.ts), and
// the limits under a files quota (fleet/quota.ts, whose last case kills one instance). Within a
// group the cases run in order; the groups mostly wait (the quota group's outage alone is over 30 s). Cluster mode is test/e2e/scale-out.test.ts; a Sentinel
// failover, test/e2e/redis-failover.test.ts; restarts behind load balancers, rolling-restart.test.ts.
import { after, before, describe } from 'node:test';
import { type BlobStore, createBlobStore } from '../../src/infra/storage/blob-store.ts';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { CHECKS_ENV, sharedChecks } from './fleet/checks.ts';
import { QUOTA_ENV, quotaCases } from './fleet/quota.ts';
import { STATE_ENV, sharedStateCases } from './fleet/shared-state.ts';

describe('a fleet of two instances on one Redis and one S3 server', {
  skip: toolSkip('redis-server') || toolSkip('curl'),
  timeout: 540_000,
  concurrency: true,
}, () => {
  let redis: RedisHandle;
  let sharedRedis: RedisHandle;
  let s3: S3Handle;
  before(async () => {
    [redis, sharedRedis, s3] = await startAll([
      startRedis(),
      startRedis(),
      startS3('fleet-shared', ['fleet-quota']),
    ]);
  });
  after(async () => {
    await s3?.close();
    await Promise.all([redis?.stop(), sharedRedis?.stop()]);
  });

  /**
   * Starts A and B on Redis server `on` and `bucket`, both or neither. Both groups start their pairs
   * at once: four starts on a busy machine took longer than the 45 s default (load 30), and how fast
   * an instance starts is not what this file is about.
   */
  async function pair(on: RedisHandle, bucket: string, env: Record<string, string>) {
    const all = { ...s3.other(bucket).env, DEVUTIL_REDIS_URL: on.url, ...env };
    const start = { startTimeoutMs: 180_000 };
    return startAll([startDevutilProcess(all, [], start), startDevutilProcess(all, [], start)]);
  }

  describe('sharing state', { timeout: 180_000, concurrency: false }, () => {
    let a: DevutilProcess;
    let b: DevutilProcess;
    before(async () => {
      [a, b] = await pair(sharedRedis, 'fleet-shared', { ...CHECKS_ENV, ...STATE_ENV });
    });
    after(() => Promise.all([a?.stop(), b?.stop()]));
    sharedChecks('two instances', () => ({ a: a.url, b: b.url }));
    sharedStateCases(() => ({ a, b }));
  });

  describe('under a files quota', { timeout: 300_000, concurrency: false }, () => {
    let a: DevutilProcess;
    let b: DevutilProcess;
    let bucket: BlobStore;
    before(async () => {
      bucket = await createBlobStore({
        ...(s3.other('fleet-quota').overrides as unknown as Parameters<typeof createBlobStore>[0]),
        dataDir: tempDir(),
        backend: 's3',
      });
      [a, b] = await pair(redis, 'fleet-quota', QUOTA_ENV);
    });
    after(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await bucket?.close();
    });
    quotaCases(() => ({ a, b, redis, bucket }));
  });
});

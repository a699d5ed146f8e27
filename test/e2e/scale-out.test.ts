// Cluster mode (--workers 2) on one machine, with Redis: the checks two instances on one Redis and one
// S3 bucket pass (test/e2e/fleet.test.ts) hold for the workers of one instance behind one address.
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { toolSkip } from '../helpers/tools.ts';
import { CHECKS_ENV, sharedChecks } from './fleet/checks.ts';

describe('cluster mode (--workers 2) with Redis', {
  skip: toolSkip('redis-server') || toolSkip('curl'),
  timeout: 180_000,
}, () => {
  let redis: RedisHandle;
  let c: DevutilProcess;
  before(async () => {
    redis = await startRedis();
    c = await startDevutilProcess({ ...CHECKS_ENV, DEVUTIL_REDIS_URL: redis.url }, ['--workers', '2']);
  });
  after(async () => {
    assert.equal(await c?.stop(), 0);
    await redis?.stop();
  });
  sharedChecks('cluster', () => ({ a: c.url, b: c.url }));
});

// The shared infra buildServer opens before the Fastify instance and closes with it: tracing,
// Redis and the state on it, metrics, the rate limiter, broadcast, readiness, blobs, usage counts.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { ServiceContext } from './context.ts';
import { RateLimiter } from './infra/limits/rate-limit.ts';
import { Metrics } from './infra/observe/metrics.ts';
import { Readiness } from './infra/observe/readiness.ts';
import { Tracing } from './infra/observe/tracing.ts';
import { StateSink } from './infra/observe/usage/sink.ts';
import { UsageRecorder } from './infra/observe/usage/usage.ts';
import { createBroadcast } from './infra/state/broadcast.ts';
import { connectRedis, redisConfigured } from './infra/state/redis.ts';
import { createState } from './infra/state/state.ts';
import { createBlobStore, incompleteUploadAgeMs } from './infra/storage/blob-store.ts';
import { tracedBlobs } from './infra/storage/traced.ts';
import { adminEnabled } from './services/admin/config.ts';
import { VERSION } from './version.ts';

/** The shared infra every utility uses: tracing, Redis and state, limits, readiness, blobs, usage. */
export type Infra = Pick<
  ServiceContext,
  'redis' | 'state' | 'metrics' | 'limiter' | 'broadcast' | 'readiness' | 'blobs' | 'usage'
> & {
  tracing: Tracing | null;
  /** The Redis connection is this server's own (closed with it), not one the caller shared. */
  ownRedis: boolean;
};

export async function openInfra(
  config: Config,
  logger: Logger,
  dataDir: string,
  shared?: Redis | null,
): Promise<Infra> {
  // Off unless a collector is configured; then the SDK is loaded here, before anything is traced.
  const tracing = await Tracing.start(config.tracing, VERSION, logger);

  const ownRedis = shared === undefined && redisConfigured(config.redis);
  const redis = shared !== undefined ? shared : ownRedis ? await connectRedis(config.redis, logger) : null;
  const state = await createState(redis, config.redis.keyPrefix);
  const metrics = new Metrics();
  const limiterErrors = metrics.counter('devutil_ratelimit_store_errors_total', 'rate limit store failures', [
    'mode',
  ]);
  const limiter = new RateLimiter(state, {
    failMode: config.redis.failMode,
    logger,
    onStoreError: () => limiterErrors.inc({ mode: config.redis.failMode }),
  });
  const broadcast = createBroadcast(redis, config.redis.keyPrefix, logger);
  const readiness = new Readiness();
  // Without Redis the files quota and Max-Downloads refuse rather than count wrong; rate limits and
  // byte budgets let requests through unless they fail closed, which then refuses everything limited.
  if (redis)
    readiness.add(
      'redis',
      async () => ({ ok: (await redis.ping()) === 'PONG' }),
      config.redis.failMode === 'closed' ? 'all' : ['files'],
    );
  const blobs = await openBlobs(config, dataDir, logger, tracing);
  // Stored files, uploaded avatars (generated ones need no store) and Telegram recipient tokens.
  readiness.add('blobs', () => blobs.ping().then(() => ({ ok: true })), ['files', 'avatar', 'telegram']);

  // Counted only when the admin dashboard is on; with Redis every instance adds to the same buckets.
  const adminCfg = adminEnabled(config) ? config.admin : null;
  const usage = adminCfg
    ? new UsageRecorder({
        sink: new StateSink(state, adminCfg.topEntries),
        capacity: adminCfg.topEntries,
        flushMs: adminCfg.flushIntervalMs,
        logger,
      })
    : null;
  return { tracing, ownRedis, redis, state, metrics, limiter, broadcast, readiness, blobs, usage };
}

async function openBlobs(config: Config, dataDir: string, logger: Logger, tracing: Tracing | null) {
  const abortAfter = config.storage.s3AbortIncompleteAfterSec * 1000;
  if (config.storage.backend === 's3' && abortAfter > 0 && abortAfter <= config.server.requestTimeoutMs)
    logger.warn(
      { abortAfterSec: abortAfter / 1000, requestTimeoutMs: config.server.requestTimeoutMs },
      'storage.s3AbortIncompleteAfterSec is not longer than a request may run: an upload still in flight on another node may be aborted',
    );
  const store = await createBlobStore({
    ...config.storage,
    dataDir,
    s3IncompleteUploadAgeMs: incompleteUploadAgeMs({
      explicitSec: config.storage.s3AbortIncompleteAfterSec,
      requestTimeoutMs: config.server.requestTimeoutMs,
      uploadExpirySec: config.files.uploadExpirySec,
    }),
    logger: logger.child({ svc: 'storage' }),
  });
  return tracing ? tracedBlobs(store) : store;
}

/** Closes what openInfra opened, in the order the pieces depend on each other. */
export async function closeInfra(infra: Infra): Promise<void> {
  await infra.usage?.close();
  await infra.limiter.close();
  await infra.blobs.close();
  await infra.broadcast.close();
  await infra.state.close();
  if (infra.ownRedis && infra.redis) infra.redis.disconnect();
  await infra.tracing?.close();
}

// The shared Redis connection (only when DEVUTIL_REDIS_URL is set). Commands fail fast while it is
// down instead of queueing, so callers can apply their fail-open / fail-closed policy; ioredis
// reconnects in the background and the limits recover by themselves. The command timeout (3 s by
// default) is what a frozen Redis costs a request; at 1 s, event-loop stalls on a loaded 2-core
// machine fired it falsely (the reply was there, the timer ran first). A false timeout is safe: the
// state layer's writes are idempotent or plain additions, the quota refuses rather than counting
// wrong, and a settle that failed is retried. ioredis itself is loaded only
// here, when a URL is configured: a server without Redis does not pay for loading it at start-up.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { redact } from '../observe/logger.ts';

export async function connectRedis(url: string, logger: Logger, commandTimeoutMs = 3000): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: commandTimeoutMs,
    retryStrategy: (times) => Math.min(200 * times, 2000),
  });
  let down = false;
  redis.on('error', (err) => {
    if (!down) logger.warn({ err: { message: err.message }, url: redact(url) }, 'redis unavailable');
    down = true;
  });
  redis.on('ready', () => {
    if (down) logger.info('redis reconnected');
    down = false;
  });
  return redis;
}

/** Resolves once the first connection is ready, or rejects after `ms`. */
export function redisReady(redis: Redis, ms = 3000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      cleanup();
      reject(new Error(`redis not ready after ${ms}ms`));
    }, ms);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(t);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

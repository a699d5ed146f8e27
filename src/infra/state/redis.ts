// The shared Redis connection (only when DEVUTIL_REDIS_URL or DEVUTIL_REDIS_SENTINELS is set). Commands fail fast while it is
// down instead of queueing, so callers can apply their fail-open / fail-closed policy; ioredis
// reconnects in the background and the limits recover by themselves. The command timeout (3 s by
// default) is what a frozen Redis costs a request; at 1 s, event-loop stalls on a loaded 2-core
// machine fired it falsely (the reply was there, the timer ran first). A false timeout is safe: the
// state layer's writes are idempotent or plain additions, the quota refuses rather than counting
// wrong, and a settle that failed is retried. ioredis itself is loaded only
// here, when a URL is configured: a server without Redis does not pay for loading it at start-up.
import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { redact } from '../observe/logger.ts';

/** What the redis config section says about where Redis is (one of url or sentinels). */
export interface RedisTarget {
  url: string;
  sentinels: readonly string[];
  sentinelName: string;
  username: string;
  password: string;
  sentinelPassword: string;
  commandTimeoutMs: number;
}

/** A plain URL target (tests, tools). */
export function urlTarget(url: string, commandTimeoutMs = 3000): RedisTarget {
  return {
    url,
    sentinels: [],
    sentinelName: '',
    username: '',
    password: '',
    sentinelPassword: '',
    commandTimeoutMs,
  };
}

export function redisConfigured(t: Pick<RedisTarget, 'url' | 'sentinels'>): boolean {
  return t.url !== '' || t.sentinels.length > 0;
}

/** For logs: the URL without its password, or the sentinels and the master name (never a password). */
export function describeRedis(t: RedisTarget): string {
  return t.sentinels.length ? `sentinel ${t.sentinelName} via ${t.sentinels.join(',')}` : redact(t.url);
}

/** `host:port`, `[v6]:port` or `host` (26379) as ioredis wants it; the config checked the form. */
export function parseSentinel(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(s);
  return { host: m?.[1] ?? m?.[2] ?? s, port: m?.[3] ? Number(m[3]) : 26379 };
}

/**
 * The ioredis options of the one shared client (every user of Redis goes through connectRedis; the
 * pub/sub connection is its duplicate, so it follows the sentinels too).
 */
export function clientOptions(t: RedisTarget): RedisOptions {
  const common: RedisOptions = {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: t.commandTimeoutMs,
    retryStrategy: (times) => Math.min(200 * times, 2000),
  };
  if (!t.sentinels.length) return common;
  return {
    ...common,
    sentinels: t.sentinels.map(parseSentinel),
    name: t.sentinelName,
    role: 'master',
    ...(t.username ? { username: t.username } : {}),
    ...(t.password ? { password: t.password } : {}),
    ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
    // Without it the client learns of a failover only when the old primary, reconfigured as a
    // replica by the sentinels seconds later, drops its connections: writes made there meanwhile
    // are lost when it resyncs. Subscribed to +switch-master, the client moves at once.
    failoverDetector: true,
    // A demoted primary answers writes with READONLY until it closes the connection: reconnect
    // (through the sentinels) now. The command itself is not resent; it fails, and the caller's
    // fail-open / fail-closed policy applies to it as to any Redis error.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
}

export async function connectRedis(t: RedisTarget, logger: Logger): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = t.url ? new Redis(t.url, clientOptions(t)) : new Redis(clientOptions(t));
  const where = describeRedis(t);
  let down = false;
  let connected = false;
  redis.on('error', (err) => {
    if (!down) logger.warn({ err: { message: err.message }, url: where }, 'redis unavailable');
    down = true;
  });
  // A failover (or a dropped connection) reconnects without an error first: log every new connection.
  redis.on('ready', () => {
    if (connected) logger.info({ url: where, was: down ? 'unavailable' : 'closed' }, 'redis reconnected');
    connected = true;
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

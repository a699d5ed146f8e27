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
    failovers.delete(redis);
  });
  if (t.sentinels.length) watchFailovers(redis, t, logger, Redis);
  return redis;
}

/** Clients whose primary is being failed over, with when the hold ends at the latest (epoch ms). */
const failovers = new WeakMap<Redis, number>();

/** The longest a failover holds writes that must not be lost, if the client is never told it ended. */
const FAILOVER_HOLD_MS = 15_000;

/**
 * True while the sentinels fail over this client's primary and the client has not moved yet. From
 * the replica's promotion to the sentinels' announcement of it (about a second: the leader confirms
 * the promotion first), the old primary still acknowledges writes, and they are lost when it
 * resyncs as a replica: 1,200 of 3,600 reservations in one run, from 0.2 s to 1.2 s after
 * SENTINEL FAILOVER. A user that cannot afford a lost write (the files quota's reservations) refuses
 * meanwhile instead.
 */
export function failingOver(redis: Redis): boolean {
  const until = failovers.get(redis);
  return until !== undefined && Date.now() < until;
}

/**
 * Subscribes to every sentinel's failover events for our primary: the leader publishes
 * +selected-slave before it promotes the replica (a tick of its 100 ms timer later), and an abort
 * if it gives up. The hold ends when the client is ready on the new primary.
 */
function watchFailovers(redis: Redis, t: RedisTarget, logger: Logger, Client: typeof Redis): void {
  // Not +promoted-slave: it can come a moment before +switch-master, and then after the move.
  const start = ['+selected-slave', '+failover-state-send-slaveof-noone'];
  const abort = [
    '-failover-abort-not-elected',
    '-failover-abort-no-good-slave',
    '-failover-abort-slave-timeout',
  ];
  const watchers = t.sentinels.map((s) => {
    const w = new Client({
      ...parseSentinel(s),
      ...(t.sentinelPassword ? { password: t.sentinelPassword } : {}),
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(200 * times, 2000),
      autoResubscribe: false,
    });
    w.on('error', () => {}); // the data client reports Redis trouble; a sentinel away is not ours to log
    w.subscribe(...start, ...abort).catch(() => {});
    resubscribeOnReconnect(w, () => [...start, ...abort]);
    w.on('message', (channel: string, message: string) => {
      if (!message.split(' ').includes(t.sentinelName)) return;
      if (abort.includes(channel)) {
        failovers.delete(redis);
        return;
      }
      if (!failingOver(redis))
        logger.info(
          { url: describeRedis(t), event: channel },
          'redis failover under way; holding quota reservations',
        );
      failovers.set(redis, Date.now() + FAILOVER_HOLD_MS);
    });
    return w;
  });
  // Closed with the client. Not on its 'end' event: a client closed while it waits to reconnect
  // (its primary gone) never emits one, and the watchers would keep the process alive.
  const stop = () => {
    for (const w of watchers) w.disconnect();
  };
  const disconnect = redis.disconnect.bind(redis);
  redis.disconnect = (reconnect = false) => {
    if (!reconnect) stop();
    disconnect(reconnect);
  };
  const quit = redis.quit.bind(redis);
  redis.quit = ((...args: Parameters<typeof redis.quit>) => {
    stop();
    return quit(...args);
  }) as typeof redis.quit;
}

/**
 * Keeps a subscriber connection subscribed to `channels()` after each reconnect. Make the client
 * with `autoResubscribe: false`: ioredis's own resubscription leaves the SUBSCRIBE's promise
 * unhandled, so a client closed while it ran (a shutdown just after Redis came back) raised an
 * unhandled rejection, which ends a Node process. Here a failed SUBSCRIBE is dropped; the next
 * reconnect sends it again. The first connection's subscriptions are the caller's own.
 */
export function resubscribeOnReconnect(client: Redis, channels: () => string[]): void {
  let connected = false;
  client.on('ready', () => {
    if (connected) {
      const list = channels();
      if (list.length) client.subscribe(...list).catch(() => {});
    }
    connected = true;
  });
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

// Messages to every instance of a deployment, for invalidations ("this avatar changed"): Redis
// pub/sub when Redis is configured, else this process alone. A subscribed ioredis connection can
// run no other command, so the subscriber is a second connection of its own. Delivery is at most
// once: a message published while an instance's subscriber is reconnecting never reaches it, so
// each subscription also gets a resync call after every reconnect, to drop whatever it may have
// missed; and what a subscriber caches should still expire by itself (a publisher cut off from
// Redis cannot tell the others).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { resubscribeOnReconnect } from './redis.ts';

export interface Subscription {
  /** A message from any instance, this one included (publish waits for this instance's handling). */
  message(text: string): void | Promise<void>;
  /** The subscriber reconnected: messages may have been lost meanwhile. */
  resync?(): void;
}

export interface Broadcast {
  readonly kind: 'local' | 'redis';
  /** Delivers to this instance at once and to the others through Redis; never throws. */
  publish(channel: string, text: string): Promise<void>;
  subscribe(channel: string, s: Subscription): void;
  /** Resolves once the subscriptions made so far are active in Redis, or after `ms`: false then. */
  ready(ms: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Largest message passed on; invalidations are a few hashes. */
const MAX_MESSAGE = 4096;

export function createBroadcast(redis: Redis | null, keyPrefix: string, logger: Logger): Broadcast {
  const subs = new Map<string, Subscription[]>();
  const deliver = async (channel: string, text: string): Promise<void> => {
    await Promise.all(
      (subs.get(channel) ?? []).map(async (s) => {
        try {
          await s.message(text);
        } catch (err) {
          logger.warn({ channel, err: { message: String(err) } }, 'broadcast handler failed');
        }
      }),
    );
  };
  if (!redis) {
    return {
      kind: 'local',
      publish: async (channel, text) => deliver(channel, text),
      subscribe: (channel, s) => void subs.set(channel, [...(subs.get(channel) ?? []), s]),
      ready: async () => true,
      close: async () => {},
    };
  }

  // The instance's own messages come back through Redis too: they were delivered by publish().
  const self = randomUUID();
  const prefix = `${keyPrefix}bus:`;
  // Unlike the command connection, this one queues while offline and resubscribes on reconnect.
  const sub = redis.duplicate({
    lazyConnect: true,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResubscribe: false,
  });
  resubscribeOnReconnect(sub, () => [...subs.keys()].map((c) => prefix + c));
  sub.on('error', () => {}); // the command connection logs Redis being down
  let connected = false;
  sub.on('ready', () => {
    if (connected) for (const list of subs.values()) for (const s of list) s.resync?.();
    connected = true;
  });
  sub.on('message', (channel: string, raw: string) => {
    if (!channel.startsWith(prefix) || raw.length > MAX_MESSAGE) return;
    let m: unknown;
    try {
      m = JSON.parse(raw);
    } catch {
      return;
    }
    const { from, text } = (m ?? {}) as { from?: unknown; text?: unknown };
    if (from !== self && typeof text === 'string') void deliver(channel.slice(prefix.length), text);
  });
  let pending: Promise<unknown> = Promise.resolve();

  return {
    kind: 'redis',
    async publish(channel, text) {
      await deliver(channel, text);
      try {
        await redis.publish(prefix + channel, JSON.stringify({ from: self, text }));
      } catch (err) {
        logger.warn({ channel, err: { message: String(err) } }, 'broadcast publish failed');
      }
    },
    subscribe(channel, s) {
      const first = !subs.has(channel);
      subs.set(channel, [...(subs.get(channel) ?? []), s]);
      if (!first) return;
      pending = Promise.all([pending, sub.subscribe(prefix + channel).catch(() => {})]);
    },
    async ready(ms) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), ms);
      });
      return Promise.race([pending.then(() => true), late]).finally(() => clearTimeout(timer));
    },
    async close() {
      sub.disconnect();
    },
  };
}

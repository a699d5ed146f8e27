// The broadcast bus on a real redis-server: two "instances" (two connections each), and the
// process-local bus used without Redis.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { waitFor } from '../../../test/helpers/wait.ts';
import { type Broadcast, createBroadcast } from './broadcast.ts';
import { connectRedis, redisReady, urlTarget } from './redis.ts';

const log = pino({ level: 'silent' });

describe('broadcast without Redis', () => {
  it('delivers to this process and waits for the handlers', async () => {
    const bus = createBroadcast(null, 'p:', log);
    const got: string[] = [];
    bus.subscribe('c', {
      message: async (t) => {
        await new Promise((r) => setTimeout(r, 10));
        got.push(t);
      },
    });
    await bus.publish('c', 'one');
    await bus.publish('other', 'ignored');
    assert.deepEqual(got, ['one']);
  });
});

describe('broadcast over Redis pub/sub', { skip: toolSkip('redis-server') }, () => {
  let server: RedisHandle;
  const conns: Redis[] = [];
  const buses: Broadcast[] = [];
  const instance = async () => {
    const redis = await connectRedis(urlTarget(server.url), log);
    conns.push(redis);
    await redisReady(redis);
    const bus = createBroadcast(redis, 'test:', log);
    buses.push(bus);
    return { redis, bus };
  };
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const b of buses) await b.close();
    for (const c of conns) c.disconnect();
    await server.stop();
  });

  it('reaches the other instance once, and this one once (not again through Redis)', async () => {
    const a = await instance();
    const b = await instance();
    const seenA: string[] = [];
    const seenB: string[] = [];
    a.bus.subscribe('avatar', { message: (t) => void seenA.push(t) });
    b.bus.subscribe('avatar', { message: (t) => void seenB.push(t) });
    assert.equal(await a.bus.ready(3000), true);
    assert.equal(await b.bus.ready(3000), true);
    await a.bus.publish('avatar', 'changed-1');
    assert.deepEqual(seenA, ['changed-1'], 'delivered locally before publish returns');
    await waitFor(() => seenB.length === 1, 'the other instance to get the message', 5000);
    assert.deepEqual(seenB, ['changed-1']);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(seenA, ['changed-1'], 'its own message is not delivered twice');
  });

  it('ignores foreign or malformed messages on its channels', async () => {
    const b = await instance();
    const seen: string[] = [];
    b.bus.subscribe('x', { message: (t) => void seen.push(t) });
    await b.bus.ready(3000);
    await b.redis.publish('test:bus:x', 'not json');
    await b.redis.publish('test:bus:x', JSON.stringify({ from: 'someone', text: 42 }));
    await b.redis.publish('test:bus:x', 'x'.repeat(10_000));
    await b.redis.publish('test:bus:x', JSON.stringify({ from: 'someone', text: 'fine' }));
    await waitFor(() => seen.length === 1, 'the well-formed message', 5000);
    assert.deepEqual(seen, ['fine']);
  });

  // ioredis's own resubscription left its SUBSCRIBE's promise unhandled: closing the bus while it
  // ran (a shutdown just after Redis came back) was an unhandled rejection, which ends a process.
  it('closes while it resubscribes after a reconnect without an unhandled rejection', async () => {
    const redis = await connectRedis(urlTarget(server.url), log);
    conns.push(redis);
    await redisReady(redis);
    // The bus's own subscriber connection, to close the bus the moment it is ready again.
    let sub: Redis | undefined;
    const duplicate = redis.duplicate.bind(redis);
    redis.duplicate = ((o) => {
      sub = duplicate(o);
      return sub;
    }) as typeof redis.duplicate;
    const bus = createBroadcast(redis, 'test:', log);
    bus.subscribe('closing', { message: () => {} });
    assert.equal(await bus.ready(3000), true);
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => void unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      let readies = 0;
      sub?.on('ready', () => {
        readies++;
        void bus.close();
        // Before Redis's answer to the resubscription is read: the close finds it in flight.
        sub?.stream.destroy();
      });
      await server.restart();
      await waitFor(() => readies === 1, 'the subscriber to reconnect', 10_000);
      // A rejection is reported once the ticks that follow it have run.
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(unhandled.map(String), []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('calls resync after a reconnect and keeps receiving', async () => {
    const a = await instance();
    const b = await instance();
    const seen: string[] = [];
    let resyncs = 0;
    b.bus.subscribe('r', { message: (t) => void seen.push(t), resync: () => void resyncs++ });
    await b.bus.ready(3000);
    await server.restart();
    await waitFor(() => resyncs === 1, 'resync after the subscriber reconnected', 10_000);
    await waitFor(() => a.redis.status === 'ready', 'the publisher to reconnect', 10_000);
    // Resubscribing follows the reconnect; publish until the message gets through.
    await waitFor(
      () => {
        if (seen.length === 0) void a.bus.publish('r', 'after');
        return seen.includes('after');
      },
      'a message after the reconnect',
      10_000,
    );
  });
});

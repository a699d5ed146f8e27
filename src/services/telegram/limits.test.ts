// The relay's budgets: per client IP, per bot key (whoever sends), Telegram's per-bot and per-chat
// pacing, and the bucket ids in a real Redis (the key is hashed, never stored).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { BOT, CHATS, FakeBotApi } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../../../test/fixtures/telegram/overrides.ts';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { keyId } from './key.ts';

const URL_PATH = '/rest/api/v1/telegram';
const OTHER_KEY = '7012345679:AAOtherOtherOtherOtherOtherOtherOt1';

describe('telegram relay budgets', () => {
  for (const k of [BOT.token, OTHER_KEY]) registerSecret(k);
  let fake: FakeBotApi;
  const apps: FastifyInstance[] = [];
  const build = async (telegram: Record<string, unknown>) => {
    const app = await buildTestServer({
      overrides: {
        ...OTHERS_OFF,
        egress: { resolve: [fake.resolve] },
        telegram: { ...BUDGETS_OFF, apiBase: fake.apiBase, ...telegram },
      },
    });
    apps.push(app);
    return app;
  };
  const send = (app: FastifyInstance, ip: string, chatId: number, apiKey = BOT.token) =>
    app.inject({
      method: 'POST',
      url: URL_PATH,
      remoteAddress: ip,
      payload: { apiKey, chatId, msgText: 'x' },
    });

  before(async () => {
    fake = await FakeBotApi.start();
    fake.bots.set(OTHER_KEY, {
      token: OTHER_KEY,
      id: 7012345679,
      username: 'other_bot',
      first_name: 'other',
    });
  });
  after(async () => {
    for (const a of apps) await a.close();
    await fake.close();
  });

  it('limits each client IP and answers 429 with Retry-After in the legacy envelope', async () => {
    const app = await build({ rateLimit: '2/min' });
    for (let i = 0; i < 2; i++)
      assert.equal((await send(app, '198.51.100.1', CHATS.user!.id)).statusCode, 200);
    const r = await send(app, '198.51.100.1', CHATS.user!.id);
    assert.equal(r.statusCode, 429);
    const retry = Number(r.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry} within the 1-minute window`);
    assert.equal(r.headers['ratelimit-limit'], '2');
    assert.deepEqual(r.json(), {
      status: 0,
      msg: `rate limit exceeded: 2 requests per 60s; retry in ${retry}s`,
      data: null,
    });
    assert.equal((await send(app, '198.51.100.2', CHATS.user!.id)).statusCode, 200, 'other IPs unaffected');
  });

  it('limits each bot key across client IPs', async () => {
    const app = await build({ keyRateLimit: '2/min' });
    assert.equal((await send(app, '203.0.113.1', CHATS.user!.id)).statusCode, 200);
    assert.equal((await send(app, '203.0.113.2', CHATS.user!.id)).statusCode, 200);
    const r = await send(app, '203.0.113.3', CHATS.user!.id);
    assert.equal(r.statusCode, 429);
    const retry = Number(r.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry} within the 1-minute window`);
    assert.equal(
      r.json().msg,
      `rate limit for this bot key exceeded: 2 messages per 60s; retry in ${retry}s`,
    );
    assert.equal(
      (await send(app, '203.0.113.3', CHATS.user!.id, OTHER_KEY)).statusCode,
      200,
      'other keys unaffected',
    );
  });

  it("answers 429 early at Telegram's per-chat pace, before Telegram would", async () => {
    const app = await build({ chatRate: '1/min' });
    const before = fake.received.length;
    assert.equal((await send(app, '192.0.2.1', CHATS.user!.id)).statusCode, 200);
    const r = await send(app, '192.0.2.1', CHATS.user!.id);
    assert.equal(r.statusCode, 429);
    assert.match(r.json().msg, /per-chat pace/);
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.equal(fake.received.length, before + 1, 'the refused message never reached Telegram');
    assert.equal((await send(app, '192.0.2.1', CHATS.group!.id)).statusCode, 200, 'other chats unaffected');
    assert.equal(
      (await send(app, '192.0.2.1', CHATS.user!.id, OTHER_KEY)).statusCode,
      200,
      'same chat, other bot',
    );
  });

  it('counts @ChannelName and @channelname as one chat for the per-chat pace', async () => {
    const app = await build({ chatRate: '1/min' });
    const to = (chatId: string) =>
      app.inject({ method: 'POST', url: URL_PATH, payload: { apiKey: BOT.token, chatId, msgText: 'x' } });
    assert.equal((await to(`@${CHATS.channel!.username}`)).statusCode, 200);
    assert.equal((await to(`@${CHATS.channel!.username!.toUpperCase()}`)).statusCode, 429);
  });

  it("answers 429 early at Telegram's per-group pace, for groups only", async () => {
    const app = await build({ groupRate: '2/min' });
    assert.equal((await send(app, '192.0.2.30', CHATS.group!.id)).statusCode, 200);
    assert.equal((await send(app, '192.0.2.30', CHATS.group!.id)).statusCode, 200);
    const r = await send(app, '192.0.2.30', CHATS.group!.id);
    assert.equal(r.statusCode, 429);
    assert.match(r.json().msg, /per-group pace/);
    for (let i = 0; i < 3; i++) assert.equal((await send(app, '192.0.2.30', CHATS.user!.id)).statusCode, 200);
  });

  it("answers 429 early at Telegram's per-bot pace across chats", async () => {
    const app = await build({ botRate: '2/min' });
    assert.equal((await send(app, '192.0.2.9', CHATS.user!.id)).statusCode, 200);
    assert.equal((await send(app, '192.0.2.9', CHATS.group!.id)).statusCode, 200);
    const r = await send(app, '192.0.2.9', CHATS.channel!.id);
    assert.equal(r.statusCode, 429);
    assert.match(r.json().msg, /per-bot pace/);
  });

  it('does not charge the per-key budget for a request refused as bad input', async () => {
    const app = await build({ keyRateLimit: '1/min' });
    const bad = await app.inject({
      method: 'POST',
      url: URL_PATH,
      payload: { apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 5 },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal((await send(app, '192.0.2.20', CHATS.user!.id)).statusCode, 200);
  });
});

describe('telegram relay budgets in Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  let client: Redis;
  let fake: FakeBotApi;
  let app: FastifyInstance;
  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    fake = await FakeBotApi.start();
    app = await buildTestServer({
      redis: client,
      overrides: {
        ...OTHERS_OFF,
        egress: { resolve: [fake.resolve] },
        telegram: {
          apiBase: fake.apiBase,
          rateLimit: '100/min',
          keyRateLimit: '100/min',
          botRate: '30/s',
          chatRate: '5/5s',
        },
      },
    });
  });
  after(async () => {
    await app.close();
    client.disconnect();
    await redis.stop();
    await fake.close();
  });

  it('stores bucket ids derived from a hash of the key, never the key itself', async () => {
    const r = await app.inject({
      method: 'POST',
      url: URL_PATH,
      payload: { apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' },
    });
    assert.equal(r.statusCode, 200);
    const keys = await client.keys('*');
    const id = keyId(BOT.token);
    assert.ok(
      keys.some((k) => k.endsWith(`telegram-key:${id}`)),
      keys.join(','),
    );
    assert.ok(
      keys.some((k) => k.endsWith(`telegram-chat:${id}:${CHATS.user!.id}`)),
      keys.join(','),
    );
    const secret = BOT.token.split(':')[1]!;
    assert.equal(keys.join('\n').includes(secret), false);
    assert.equal(keys.join('\n').includes(BOT.token.split(':')[0]!), false, 'not even the bot id');
  });

  it("shares Telegram's retry_after pause through Redis, keyed by the hashed key", async () => {
    fake.fault({ kind: 'flood', retryAfter: 9 });
    const payload = { apiKey: BOT.token, chatId: CHATS.group!.id, msgText: 'x' };
    assert.equal((await app.inject({ method: 'POST', url: URL_PATH, payload })).statusCode, 429);
    const key = (await client.keys('*tg-pause:*'))[0] ?? '';
    assert.ok(key.endsWith(`tg-pause:${keyId(BOT.token)}:${CHATS.group!.id}`), key);
    const ttl = await client.pttl(key);
    assert.ok(ttl > 0 && ttl <= 9000, String(ttl));
    // A second instance sharing the Redis refuses too, without calling Telegram.
    const second = await buildTestServer({
      redis: client,
      overrides: { ...OTHERS_OFF, egress: { resolve: [fake.resolve] }, telegram: { apiBase: fake.apiBase } },
    });
    try {
      const before = fake.received.length;
      const r = await second.inject({ method: 'POST', url: URL_PATH, payload });
      assert.equal(r.statusCode, 429);
      assert.match(r.json().msg, /pause this chat/);
      assert.equal(fake.received.length, before);
    } finally {
      await second.close();
    }
  });
});

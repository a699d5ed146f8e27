// Hostile-input class: JSON nested so deep that it parses but cannot be serialised again (the relay
// forwards msgText with JSON.stringify; Node 20 overflows its stack past ~10k levels), or so deep
// that a recursive parser would overflow. Every JSON route refuses it with 400 in its own envelope
// before anything is forwarded; nesting inside strings and up to the cap still works.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { BOT, CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF } from '../fixtures/telegram/overrides.ts';
import { buildTestServer } from '../helpers/server.ts';

const arrays = (n: number, inner = '') => `${'['.repeat(n)}${inner}${']'.repeat(n)}`;
const objects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const relay = (msgText: string, extra = '') =>
  `{"apiKey":"${BOT.token}","chatId":${CHATS['user']!.id},"msgText":${msgText}${extra}}`;
const LEGACY = { status: 0, data: null };

// [name, url, body, status, envelope fields the answer must carry]
const ROWS: [string, string, string, number, Record<string, unknown>][] = [
  [
    '100k nested arrays in msgText.entities',
    '/rest/api/v1/telegram',
    relay(`{"text":"hi","entities":${arrays(100_000)}}`),
    400,
    LEGACY,
  ],
  [
    '30k nested objects in msgText.reply_markup',
    '/rest/api/v1/telegram',
    relay(`{"text":"hi","reply_markup":${objects(30_000)}}`),
    400,
    LEGACY,
  ],
  [
    'an unknown top-level field nested 100k deep',
    '/rest/api/v1/telegram',
    relay('"hi"', `,"x":${arrays(100_000)}`),
    400,
    LEGACY,
  ],
  ['a whole body of 100k nested arrays', '/rest/api/v1/telegram', arrays(100_000), 400, LEGACY],
  ['500k unclosed brackets (a parser stack bomb)', '/rest/api/v1/telegram', '['.repeat(500_000), 400, LEGACY],
  [
    '65 levels, one past the cap',
    '/rest/api/v1/telegram',
    relay(`{"text":"hi","x":${arrays(63)}}`),
    400,
    LEGACY,
  ],
  [
    'Kroki JSON with 100k nested arrays',
    '/plantuml/',
    `{"diagram_source":"A -> B","x":${arrays(100_000)}}`,
    400,
    {},
  ],
  ['deep JSON sent to the file API', '/api/file/deep', arrays(100_000), 400, { success: false }],
];

describe('JSON nested too deep to serialise', () => {
  let app: FastifyInstance;
  let fake: FakeBotApi;
  before(async () => {
    fake = await FakeBotApi.start();
    app = await buildTestServer({
      overrides: {
        egress: { resolve: [fake.resolve] },
        telegram: { ...BUDGETS_OFF, apiBase: fake.apiBase, maxBodyBytes: '2MiB' },
        server: { bodyLimit: '2MiB' },
        diagrams: { maxSourceBytes: '1MiB' },
      },
    });
  });
  after(async () => {
    await app?.close();
    await fake?.close();
  });

  for (const [name, url, payload, status, fields] of ROWS) {
    it(`answers ${name} with ${status} in the route's envelope`, async () => {
      const before = fake.received.length;
      const r = await app.inject({
        method: 'POST',
        url,
        payload,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(r.statusCode, status, r.body.slice(0, 200));
      if (Object.keys(fields).length) {
        const body = r.json() as Record<string, unknown>;
        for (const [k, v] of Object.entries(fields)) assert.deepEqual(body[k], v, k);
      } else assert.match(String(r.headers['content-type']), /^text\/plain/);
      assert.doesNotMatch(r.body, /Maximum call stack|RangeError|internal error/);
      assert.equal(fake.received.length, before, 'nothing was forwarded to Telegram');
    });
  }

  it('names the cap in the refusal', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/rest/api/v1/telegram',
      payload: arrays(100),
      headers: { 'content-type': 'application/json' },
    });
    assert.match(r.json().msg, /nested deeper than 64 levels/);
  });

  it('still relays nesting up to the cap, and brackets inside strings do not count', async () => {
    const atCap = relay(`{"text":"hi","x":${arrays(62)}}`); // body 1 + msgText 1 + 62 = 64 levels
    const inString = relay(`{"text":"${arrays(2000)}"}`, ',"parseMode":"none"'); // 4000 characters
    for (const payload of [atCap, inString]) {
      const r = await app.inject({
        method: 'POST',
        url: '/rest/api/v1/telegram',
        payload,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(r.statusCode, 200, r.body.slice(0, 200));
      assert.equal(r.json().status, 1);
    }
  });
});

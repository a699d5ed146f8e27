// Hostile input for the Bot API base URL (/telegram/bot<key>/<method>, /telegram/file/bot<key>/...)
// and recipient tokens, in the full server composition against the fake Bot API over real HTTP:
// path-bending tokens and methods, unknown methods, bodies of the wrong type or size, a recipient
// token reaching for another chat or method, bots off the operator's list. Every refusal is in the
// Bot API's shape, reaches Telegram never, and no key or token appears in an answer, a log line,
// /metrics or the admin stats.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { BOT, CHATS, FakeBotApi } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../../../test/fixtures/telegram/overrides.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import {
  buildTestServer,
  LogCapture,
  type Running,
  startTestServer,
  tempDir,
} from '../../../test/helpers/server.ts';

const ADMIN = registerSecret(`admin-${randomBytes(12).toString('hex')}`);
const SECRET = BOT.token.split(':')[1]!;
const GROUP = CHATS.group!.id;
const USER = CHATS.user!.id;

/** A multipart/form-data body: text fields, then files. */
function multipart(
  fields: [string, string][],
  files: [string, string, Buffer][] = [],
  filesFirst = false,
): { payload: Buffer; headers: Record<string, string> } {
  const b = `----hostile${randomBytes(8).toString('hex')}`;
  const text: Buffer[] = [];
  const parts: Buffer[] = [];
  for (const [k, v] of fields)
    text.push(Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (!filesFirst) parts.push(...text);
  for (const [k, name, data] of files) {
    parts.push(
      Buffer.from(
        `--${b}\r\nContent-Disposition: form-data; name="${k}"; filename="${name}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      data,
      Buffer.from('\r\n'),
    );
  }
  if (filesFirst) parts.push(...text);
  parts.push(Buffer.from(`--${b}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${b}` } };
}

describe('telegram Bot API base URL and recipient tokens: hostile input', { timeout: 120_000 }, () => {
  registerSecret(BOT.token);
  const logs = new LogCapture();
  const dataDir = tempDir();
  let fake: FakeBotApi;
  let srv: Running;
  let app: FastifyInstance;
  let listed: FastifyInstance;
  let token = '';
  let userOnly = '';

  before(async () => {
    fake = await FakeBotApi.start();
    const telegram = {
      ...BUDGETS_OFF,
      apiBase: fake.apiBase,
      connectTimeoutMs: 30_000,
      apiMaxBodyBytes: '2KiB',
      maxUploadBytes: '8KiB',
      maxFileBytes: '4KiB',
      longPollMaxSec: 1,
    };
    const common = { ...OTHERS_OFF, server: { dataDir }, egress: { resolve: [fake.resolve] } };
    try {
      srv = await startTestServer({ logs, overrides: { ...common, admin: { token: ADMIN }, telegram } });
      app = srv.app;
      // The same store, but an operator who relays for bot 1 only.
      listed = await buildTestServer({
        logs,
        overrides: { ...common, telegram: { ...telegram, allowedBots: ['1'] } },
      });
    } catch (err) {
      await srv?.close();
      await fake.close();
      throw err;
    }
    const register = async (chat: number, methods: string[]) => {
      const r = await app.inject({
        method: 'POST',
        url: '/telegram/recipients',
        headers: { authorization: `Bearer ${BOT.token}` },
        payload: { chat_id: chat, methods },
      });
      assert.equal(r.statusCode, 201, r.body);
      return registerSecret(r.json().result.token as string);
    };
    token = await register(GROUP, ['sendMessage', 'sendDocument']);
    userOnly = await register(USER, ['sendMessage']);
  });
  after(async () => {
    await listed?.close();
    await srv?.close();
    await fake?.close();
  });

  const call = (o: InjectOptions, on: FastifyInstance = app) => on.inject(o);
  const json = (url: string, payload: unknown) => ({
    method: 'POST' as const,
    url,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });

  const form = (url: string, payload: string) => ({
    method: 'POST' as const,
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload,
  });
  const text = (url: string, payload: string) => ({
    method: 'POST' as const,
    url,
    headers: { 'content-type': 'text/plain' },
    payload,
  });
  /** A recipient registration with `key` as the owner's bearer key. */
  const owner = (payload: unknown, key: string) => ({
    ...json('/telegram/recipients', payload),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
  });

  /** [what, request (a function: tokens exist only after before()), status, description] */
  type Case = [string, () => InjectOptions, number, RegExp];
  const key = `/telegram/bot${BOT.token}`;
  const rcpt = () => `/telegram/bot${token}`;
  const cases: Case[] = [
    // Paths that could bend the upstream URL.
    [
      'a path without a token',
      () => ({ method: 'GET', url: '/telegram/botnotatoken/getMe' }),
      404,
      /not a bot token/,
    ],
    ['a token with a path in it', () => ({ method: 'GET', url: `${key}%2F..%2FgetMe/getMe` }), 404, /token/],
    ['a token with CRLF', () => ({ method: 'GET', url: `${key}%0d%0aX-Evil:%201/getMe` }), 404, /token/],
    ['a method with a slash', () => ({ method: 'GET', url: `${key}/get%2FMe` }), 404, /no such method/],
    ['a method with a dot segment', () => ({ method: 'GET', url: `${key}/..` }), 404, /./],
    ['a method with a NUL', () => ({ method: 'GET', url: `${key}/getMe%00` }), 404, /no such method/],
    ['a method of fullwidth letters', () => ({ method: 'GET', url: `${key}/%EF%BD%87etMe` }), 404, /method/],
    ['a 65-letter method', () => ({ method: 'GET', url: `${key}/${'a'.repeat(65)}` }), 404, /method/],
    // Bodies.
    [
      'malformed JSON',
      () => ({ ...json(`${key}/sendMessage`, 0), payload: '{"chat_id":' }),
      400,
      /malformed JSON/,
    ],
    ['a JSON array', () => json(`${key}/sendMessage`, [1, 2]), 400, /object of parameters/],
    [
      'a body type the Bot API does not take',
      () => ({
        method: 'POST',
        url: `${key}/sendMessage`,
        payload: '<a/>',
        headers: { 'content-type': 'application/xml' },
      }),
      415,
      /JSON, a form or multipart/,
    ],
    [
      'a JSON body over DEVUTIL_TELEGRAM_API_MAX_BODY_BYTES',
      () => json(`${key}/sendMessage`, { chat_id: USER, text: 'x'.repeat(3000) }),
      413,
      /API_MAX_BODY_BYTES/,
    ],
    [
      'a multipart upload declared over DEVUTIL_TELEGRAM_MAX_UPLOAD_BYTES',
      () => ({
        method: 'POST',
        url: `${key}/sendDocument`,
        ...multipart([['chat_id', String(USER)]], [['document', 'big.bin', randomBytes(9 * 1024)]]),
      }),
      413,
      /MAX_UPLOAD_BYTES/,
    ],
    // File downloads.
    [
      'a download path with dot segments (resolved away before routing)',
      () => ({ method: 'GET', url: `/telegram/file/bot${BOT.token}/documents/%2e%2e/%2e%2e/x` }),
      404,
      /no such route/,
    ],
    [
      'a download path with an encoded ../',
      () => ({ method: 'GET', url: `/telegram/file/bot${BOT.token}/documents/..%2F..%2Fx` }),
      400,
      /file path/,
    ],
    [
      'a download path with a backslash',
      () => ({ method: 'GET', url: `/telegram/file/bot${BOT.token}/documents%5Cx` }),
      400,
      /file path/,
    ],
    [
      'a download path of 600 characters',
      () => ({ method: 'GET', url: `/telegram/file/bot${BOT.token}/${'a'.repeat(600)}` }),
      400,
      /file path/,
    ],
    // A recipient token: its one chat, its methods, nothing else.
    [
      'a recipient token sending to another chat',
      () => json(`${rcpt()}/sendMessage`, { chat_id: USER, text: 'x' }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token sending to another chat by @name',
      () => json(`${rcpt()}/sendMessage`, { chat_id: '@devutil_releases', text: 'x' }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token with chat_id as an array',
      () => json(`${rcpt()}/sendMessage`, { chat_id: [GROUP], text: 'x' }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token with another chat in the query',
      () => json(`${rcpt()}/sendMessage?chat_id=${USER}`, { text: 'x' }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token with two chat_id in a form, the other last',
      () => form(`${rcpt()}/sendMessage`, `chat_id=${GROUP}&chat_id=${USER}&text=x`),
      400,
      /chat_id is given twice/,
    ],
    [
      'a recipient token quoting a message of another chat',
      () => json(`${rcpt()}/sendMessage`, { text: 'x', reply_parameters: { message_id: 1, chat_id: USER } }),
      403,
      /quote only the chat/,
    ],
    [
      'a recipient token quoting another chat in a form (JSON text)',
      () =>
        form(
          `${rcpt()}/sendMessage`,
          new URLSearchParams({
            text: 'x',
            reply_parameters: JSON.stringify({ message_id: 1, chat_id: USER }),
          }).toString(),
        ),
      403,
      /quote only the chat/,
    ],
    [
      'a recipient token through a business connection',
      () => json(`${rcpt()}/sendMessage`, { text: 'x', business_connection_id: 'b1' }),
      403,
      /business connection/,
    ],
    [
      'a recipient token calling getUpdates',
      () => ({ method: 'GET', url: `${rcpt()}/getUpdates` }),
      403,
      /may call only sendMessage, sendDocument/,
    ],
    [
      'a recipient token calling getChat',
      () => json(`${rcpt()}/getChat`, { chat_id: GROUP }),
      403,
      /may call only/,
    ],
    [
      'a recipient token calling getMe',
      () => ({ method: 'GET', url: `${rcpt()}/getMe` }),
      403,
      /may call only/,
    ],
    [
      'a recipient token calling setWebhook',
      () => json(`${rcpt()}/setWebhook`, { url: 'https://evil.example/' }),
      403,
      /may call only/,
    ],
    [
      'a recipient token calling forwardMessage',
      () => json(`${rcpt()}/forwardMessage`, { from_chat_id: USER, message_id: 1 }),
      403,
      /may call only/,
    ],
    [
      'a recipient token calling deleteMessage',
      () => json(`${rcpt()}/deleteMessage`, { message_id: 1 }),
      403,
      /may call only/,
    ],
    ['a recipient token calling an unknown method', () => json(`${rcpt()}/fooBar`, {}), 403, /may call only/],
    [
      'a recipient token calling a method it was not given',
      () => json(`/telegram/bot${userOnly}/sendDocument`, {}),
      403,
      /may call only sendMessage$/,
    ],
    [
      'a recipient token downloading a file',
      () => ({ method: 'GET', url: `/telegram/file/bot${token}/documents/file_1.bin` }),
      403,
      /cannot download/,
    ],
    [
      'a recipient token uploading to another chat',
      () => ({
        method: 'POST',
        url: `${rcpt()}/sendDocument`,
        ...multipart([['chat_id', String(USER)]], [['document', 'a.txt', Buffer.from('a')]]),
      }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token with another chat in a multipart query',
      () => ({
        method: 'POST',
        url: `${rcpt()}/sendDocument?chat_id=${USER}`,
        ...multipart([], [['document', 'a.txt', Buffer.from('a')]]),
      }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token naming another chat after its file part (the upload already under way)',
      () => ({
        method: 'POST',
        url: `${rcpt()}/sendDocument`,
        ...multipart([['chat_id', String(USER)]], [['document', 'a.bin', randomBytes(4096)]], true),
      }),
      403,
      /sends only to chat/,
    ],
    [
      'a recipient token upload over DEVUTIL_TELEGRAM_MAX_UPLOAD_BYTES (undeclared)',
      () => {
        const m = multipart([], [['document', 'big.bin', randomBytes(9 * 1024)]]);
        return { method: 'POST', url: `${rcpt()}/sendDocument`, ...m };
      },
      413,
      /./,
    ],
    [
      'a forged recipient token',
      () => json(`/telegram/bottgr_${'A'.repeat(43)}/sendMessage`, { text: 'x' }),
      401,
      /unknown or revoked/,
    ],
    [
      'a forged token on its message inlet',
      () => text(`/telegram/r/tgr_${'B'.repeat(43)}`, 'x'),
      401,
      /unknown or revoked/,
    ],
    [
      'a bot key on the message inlet',
      () => text(`/telegram/r/${BOT.token}`, 'x'),
      404,
      /not a recipient token/,
    ],
    ['an empty text on the message inlet', () => text(`/telegram/r/${token}`, ' '), 400, /send a text/],
    [
      'a text over 4096 on the message inlet',
      () => text(`/telegram/r/${token}`, 'x'.repeat(4097)),
      400,
      /over 4096/,
    ],
    [
      'a chat_id in the message inlet body',
      () => json(`/telegram/r/${token}`, { text: 'x', chat_id: USER }),
      403,
      /sends only to chat/,
    ],
    [
      "a webhook that is not Alertmanager's",
      () => json(`/telegram/r/${token}/alertmanager`, { text: 'hi' }),
      400,
      /alerts must be an array/,
    ],
    [
      'a webhook that is a JSON array',
      () => json(`/telegram/r/${token}/alertmanager`, [1]),
      400,
      /Alertmanager webhook JSON object/,
    ],
    // Registering: the owner's key, a chat Telegram knows, methods from the list.
    ['a registration without a key', () => json('/telegram/recipients', { chat_id: GROUP }), 401, /Bearer/],
    [
      'a registration with a recipient token as the key',
      () => owner({ chat_id: GROUP }, token),
      401,
      /Bearer <key>/,
    ],
    [
      'a registration for getUpdates',
      () => owner({ chat_id: GROUP, methods: ['getUpdates'] }, BOT.token),
      400,
      /methods may only be/,
    ],
    [
      'a registration with a chat_id that is an object',
      () => owner({ chat_id: { id: GROUP } }, BOT.token),
      400,
      /chat_id must be/,
    ],
    [
      'revoking with a path in the id',
      () => ({
        method: 'DELETE',
        url: '/telegram/recipients/..%2F..%2Fx',
        headers: { authorization: `Bearer ${BOT.token}` },
      }),
      404,
      /no recipient/,
    ],
  ];

  for (const [what, req, status, description] of cases) {
    it(`refuses ${what} with ${status} in the Bot API shape, before Telegram hears of it`, async () => {
      const before = fake.received.length;
      const r = await call(req());
      assert.equal(r.statusCode, status, r.body);
      const body = r.json();
      assert.equal(body.ok, false);
      assert.equal(body.error_code, status);
      assert.match(body.description, description);
      assert.equal(r.body.includes(SECRET), false);
      assert.equal(r.body.includes(token.slice(4)), false);
      assert.equal(fake.received.length, before, 'nothing reached Telegram');
    });
  }

  it('passes a method it does not know on: Telegram answers it, in its own shape', async () => {
    const r = await call({ method: 'GET', url: `${key}/fooBar` });
    assert.equal(r.statusCode, 404);
    assert.deepEqual(r.json(), { ok: false, error_code: 404, description: 'Not Found' });
    assert.equal(fake.last()?.method, 'foobar');
  });

  it('lets a recipient token send into its own chat in any spelling of it; devutil writes the call anew', async () => {
    const f = await call(
      form(`${rcpt()}/SENDMESSAGE?disable_notification=true`, `chat_id=+${GROUP}&text=own`),
    );
    assert.equal(f.statusCode, 200, f.body);
    assert.equal(fake.last()!.method, 'sendmessage');
    assert.equal(fake.last()!.contentType, 'application/json');
    assert.deepEqual(fake.last()!.args, [
      ['chat_id', GROUP],
      ['disable_notification', 'true'],
      ['text', 'own'],
    ]);
    const bare = await call(json(`${rcpt()}/sendMessage`, { text: 'no chat given' }));
    assert.equal(bare.statusCode, 200, bare.body);
    assert.equal(fake.last()!.params['chat_id'], GROUP);
    assert.equal(fake.last()!.token, BOT.token);
  });

  it('refuses a chunked upload past DEVUTIL_TELEGRAM_MAX_UPLOAD_BYTES with 413; Telegram gets no whole upload', async () => {
    const m = multipart([['chat_id', String(USER)]], [['document', 'big.bin', randomBytes(64 * 1024)]]);
    const before = fake.received.filter((x) => x.method === 'senddocument').length;
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new Uint8Array(m.payload));
        c.close();
      },
    });
    const r = await fetch(`${srv.url}${key}/sendDocument`, {
      method: 'POST',
      headers: m.headers,
      body,
      duplex: 'half',
    } as RequestInit);
    assert.equal(r.status, 413);
    const got = (await r.json()) as { ok: boolean; description: string };
    assert.equal(got.ok, false);
    assert.match(got.description, /MAX_UPLOAD_BYTES/);
    const sent = fake.received.filter((x) => x.method === 'senddocument').slice(before);
    assert.ok(
      sent.every((x) => x.bodyBytes < 64 * 1024),
      'no upload over the cap reached Telegram whole',
    );
  });

  it('shortens a getUpdates timeout to DEVUTIL_TELEGRAM_LONG_POLL_MAX_SEC', async () => {
    const r = await call({ method: 'GET', url: `${key}/getUpdates?timeout=3600` });
    assert.equal(r.statusCode, 200, r.body);
    assert.deepEqual(r.json(), { ok: true, result: [] });
    assert.equal(fake.polls.at(-1)?.timeout, 1);
    const j = await call(json(`${key}/getUpdates`, { timeout: 3600, offset: 5 }));
    assert.equal(j.statusCode, 200, j.body);
    assert.equal(fake.last()!.params['timeout'], 1);
    assert.equal(fake.last()!.params['offset'], 5);
  });

  it('refuses a download larger than DEVUTIL_TELEGRAM_MAX_FILE_BYTES with 502, and passes a small one', async () => {
    const big = fake.addFile('big.bin', randomBytes(5 * 1024));
    const r = await call({ method: 'GET', url: `/telegram/file/bot${BOT.token}/${big.path}` });
    assert.equal(r.statusCode, 502);
    assert.match(r.json().description, /MAX_FILE_BYTES/);
    const data = randomBytes(1024);
    const small = fake.addFile('small.bin', data);
    const ok = await call({ method: 'GET', url: `/telegram/file/bot${BOT.token}/${small.path}` });
    assert.equal(ok.statusCode, 200);
    assert.ok(ok.rawPayload.equals(data));
  });

  describe('a bot that is not on the operator list (DEVUTIL_TELEGRAM_ALLOWED_BOTS=1)', () => {
    const refused: [string, () => InjectOptions][] = [
      ['a Bot API call', () => json(`${key}/sendMessage`, { chat_id: USER, text: 'x' })],
      ['a getUpdates long poll', () => ({ method: 'GET', url: `${key}/getUpdates?timeout=1` })],
      [
        'a file download',
        () => ({ method: 'GET', url: `/telegram/file/bot${BOT.token}/documents/file_1.bin` }),
      ],
      ['a recipient registration', () => owner({ chat_id: GROUP }, BOT.token)],
      ['a recipient token of that bot', () => json(`${rcpt()}/sendMessage`, { text: 'x' })],
      ['its message inlet', () => text(`/telegram/r/${token}`, 'x')],
    ];
    for (const [what, req] of refused) {
      it(`refuses ${what} with 403 naming DEVUTIL_TELEGRAM_ALLOWED_BOTS`, async () => {
        const before = fake.received.length;
        const r = await call(req(), listed);
        assert.equal(r.statusCode, 403, r.body);
        assert.equal(r.json().ok, false);
        assert.match(r.json().description, /DEVUTIL_TELEGRAM_ALLOWED_BOTS/);
        assert.equal(fake.received.length, before);
      });
    }
    it('refuses the relay POST with 403 in its legacy envelope', async () => {
      const before = fake.received.length;
      const r = await listed.inject(
        json('/rest/api/v1/telegram', { apiKey: BOT.token, chatId: USER, msgText: 'x' }),
      );
      assert.equal(r.statusCode, 403);
      assert.deepEqual(Object.keys(r.json()).sort(), ['data', 'msg', 'status']);
      assert.match(r.json().msg, /DEVUTIL_TELEGRAM_ALLOWED_BOTS/);
      assert.equal(fake.received.length, before);
    });
  });

  it('answers the Alertmanager inlet 503 with Retry-After when Telegram or a pause says later (Alertmanager retries 5xx only)', async () => {
    const alerts = {
      status: 'firing',
      groupLabels: { alertname: 'Disk' },
      alerts: [{ status: 'firing', labels: { alertname: 'Disk' }, annotations: { summary: 'disk full' } }],
    };
    fake.fault({ kind: 'flood', retryAfter: 7 });
    const flood = await call(json(`/telegram/r/${userOnly}/alertmanager`, alerts));
    assert.equal(flood.statusCode, 503, flood.body);
    assert.equal(flood.headers['retry-after'], '7');
    assert.equal(flood.json().ok, false);
    assert.equal(flood.json().error_code, 503);
    assert.equal(flood.json().parameters.retry_after, 7);
    // The chat is paused now: devutil's own refusal is a 503 too on this inlet...
    const before = fake.received.length;
    const paused = await call(json(`/telegram/r/${userOnly}/alertmanager`, alerts));
    assert.equal(paused.statusCode, 503, paused.body);
    assert.ok(Number(paused.headers['retry-after']) >= 1);
    assert.match(paused.json().description, /pause/);
    // ...and a 429 on the plain message inlet, whose callers read Retry-After.
    const plain = await call(text(`/telegram/r/${userOnly}`, 'x'));
    assert.equal(plain.statusCode, 429, plain.body);
    assert.equal(fake.received.length, before, 'nothing reached Telegram while paused');
  });

  // Runs last: everything above went through the logs, the metrics and the usage counters.
  it('never shows the bot key or a recipient token in logs, /metrics or the admin stats', async () => {
    assert.ok(logs.lines.length > 40, 'logs were captured');
    const metrics = await call({ method: 'GET', url: '/metrics' });
    assert.equal(metrics.statusCode, 200);
    assert.match(metrics.body, /devutil_telegram_api_calls_total/);
    const stats = await call({
      method: 'GET',
      url: '/rest/api/v1/admin/stats',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(stats.statusCode, 200, stats.body);
    for (const [where, text] of [
      ['logs', logs.text()],
      ['metrics', metrics.body],
      ['admin stats', stats.body],
    ] as const) {
      assert.equal(text.includes(SECRET), false, `bot key in ${where}`);
      for (const t of [token, userOnly])
        assert.equal(text.includes(t.slice(4)), false, `recipient token in ${where}`);
    }
  });
});

// The relay, in the full server composition, against the fake Bot API over real HTTP: acceptance,
// Telegram's errors, upstream faults, curl, metrics, and a log capture over the whole file proving the
// bot key never leaks. Hostile input: hostile.test.ts; budgets: limits.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { BOT, CHATS, FakeBotApi } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../../../test/fixtures/telegram/overrides.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, LogCapture, type Running, startTestServer } from '../../../test/helpers/server.ts';
import { loadUndici } from '../../infra/egress/client.ts';

const URL_PATH = '/rest/api/v1/telegram';
const WRONG_KEY = '7012345678:AAWrongWrongWrongWrongWrongWrongWr0';

describe('telegram relay', () => {
  for (const k of [BOT.token, WRONG_KEY]) registerSecret(k);
  const logs = new LogCapture();
  let fake: FakeBotApi;
  let srv: Running;
  let app: FastifyInstance;
  let deadUpstream: FastifyInstance;
  let impatient: FastifyInstance;
  const post = (payload: unknown, extra: Partial<InjectOptions> = {}, on: FastifyInstance = app) =>
    on.inject({ method: 'POST', url: URL_PATH, payload: payload as object, ...extra });

  before(async () => {
    // The first outbound request loads undici inside its deadline; under tsx on a busy machine that
    // alone can take seconds.
    await loadUndici();
    fake = await FakeBotApi.start();
    srv = await startTestServer({
      logs,
      overrides: {
        egress: { resolve: [fake.resolve] },
        // Far above what an answer takes even on a very busy machine (load 50 missed 3 s); the
        // slow-upstream case has a server of its own with a short timeout.
        // The connect deadline too: a cold first call on a machine at load 50 missed the 5 s default
        // (the client also retries a connect that timed out once: nothing was sent).
        telegram: {
          ...BUDGETS_OFF,
          apiBase: fake.apiBase,
          timeoutMs: 30_000,
          connectTimeoutMs: 30_000,
          maxBodyBytes: '16KiB',
        },
      },
    });
    app = srv.app;
    const closed = CLOSED_PORT;
    deadUpstream = await buildTestServer({
      logs,
      overrides: {
        ...OTHERS_OFF,
        egress: { resolve: [`dead.telegram.test=127.0.0.1:${closed}`] },
        telegram: { ...BUDGETS_OFF, apiBase: 'http://dead.telegram.test' },
      },
    });
    impatient = await buildTestServer({
      logs,
      overrides: {
        ...OTHERS_OFF,
        egress: { resolve: [fake.resolve] },
        telegram: { ...BUDGETS_OFF, apiBase: fake.apiBase, timeoutMs: 1000 },
      },
    });
  });
  after(async () => {
    await srv.close();
    await deadUpstream.close();
    await impatient.close();
    await fake.close();
  });

  it('sends a valid call and answers status 1 with the fake message object', async () => {
    const r = await post({ apiKey: BOT.token, chatId: String(CHATS.user!.id), msgText: 'hello *world*' });
    assert.equal(r.statusCode, 200);
    const body = r.json();
    assert.deepEqual(Object.keys(body).sort(), ['data', 'msg', 'status']);
    assert.equal(body.status, 1);
    assert.equal(body.msg, 'message sent');
    assert.equal(body.data.text, 'hello world');
    assert.equal(body.data.chat.id, CHATS.user!.id);
    assert.equal(body.data.chat.username, 'ada');
    assert.equal(body.data.from.is_bot, true);
    // The Message object Telegram answered, passed on whole (message_id, date, entities included).
    assert.deepEqual(body.data, fake.lastSent);
    const got = fake.last()!;
    assert.equal(got.method, 'sendmessage');
    assert.equal(got.token, BOT.token);
    assert.equal(got.contentType, 'application/json');
    assert.deepEqual(got.params, {
      chat_id: String(CHATS.user!.id),
      text: 'hello *world*',
      parse_mode: 'MarkdownV2',
    });
  });

  it('uses MarkdownV2 by default, so a bold span becomes a bold entity', async () => {
    const r = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: '*bold* and _it_' });
    assert.equal(r.statusCode, 200);
    assert.equal(fake.last()!.params['parse_mode'], 'MarkdownV2');
    assert.deepEqual(
      r.json().data.entities.map((e: { type: string }) => e.type),
      ['bold', 'italic'],
    );
  });

  it('forwards every extra field of an object msgText, known or future', async () => {
    const msgText = {
      text: '<b>deploy</b> done',
      parse_mode: 'HTML',
      disable_notification: true,
      protect_content: true,
      reply_markup: { inline_keyboard: [[{ text: 'open', url: 'https://example.com/' }]] },
      some_future_field: { nested: [1, 2] },
    };
    const r = await post({ apiKey: BOT.token, chatId: CHATS.group!.id, msgText });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(fake.last()!.params, { chat_id: CHATS.group!.id, ...msgText });
    assert.deepEqual(r.json().data.reply_markup, msgText.reply_markup);
  });

  it('adds parse_mode MarkdownV2 to an object msgText unless given or entities are present', async () => {
    await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: { text: 'a *b*' } });
    assert.equal(fake.last()!.params['parse_mode'], 'MarkdownV2');
    const entities = [{ type: 'bold', offset: 0, length: 1 }];
    const r = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: { text: 'a.b', entities } });
    assert.equal(r.statusCode, 200);
    assert.equal('parse_mode' in fake.last()!.params, false);
    assert.deepEqual(fake.last()!.params['entities'], entities);
  });

  it('lets the top-level chatId win over a chat_id inside msgText', async () => {
    await post({
      apiKey: BOT.token,
      chatId: CHATS.user!.id,
      msgText: { text: 'x', chat_id: CHATS.group!.id },
    });
    assert.equal(fake.last()!.params['chat_id'], CHATS.user!.id);
  });

  it('honours parseMode HTML and none', async () => {
    await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: '<i>x</i>', parseMode: 'HTML' });
    assert.equal(fake.last()!.params['parse_mode'], 'HTML');
    const r = await post({
      apiKey: BOT.token,
      chatId: CHATS.user!.id,
      msgText: 'v1.2 (beta)!',
      parseMode: 'none',
    });
    assert.equal(r.statusCode, 200);
    assert.equal('parse_mode' in fake.last()!.params, false);
    assert.equal(r.json().data.text, 'v1.2 (beta)!');
  });

  it('escapes plain text for the mode with escape: true, so Telegram shows it verbatim', async () => {
    const text = 'Build #42 [main] passed: 1.2.3-rc_1 (x*y=z) ~ok~ | `tick` > \\ {done}!';
    for (const parseMode of ['MarkdownV2', 'HTML', 'Markdown']) {
      const t = parseMode === 'Markdown' ? 'a_b *c* `d` [e]' : parseMode === 'HTML' ? 'a < b && c > d' : text;
      const r = await post({
        apiKey: BOT.token,
        chatId: CHATS.user!.id,
        msgText: t,
        parseMode,
        escape: true,
      });
      assert.equal(r.statusCode, 200, `${parseMode}: ${r.body}`);
      assert.equal(r.json().data.text, t, parseMode);
    }
  });

  it("returns Telegram's can't-parse-entities error as 400 when MarkdownV2 is not escaped", async () => {
    const r = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'version 1.2' });
    assert.equal(r.statusCode, 400);
    assert.deepEqual(r.json(), {
      status: 0,
      msg: "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
      data: null,
    });
  });

  it('with plainFallback, resends once as plain text when Telegram rejects the markup', async () => {
    const before = fake.received.length;
    const r = await post({
      apiKey: BOT.token,
      chatId: CHATS.user!.id,
      msgText: 'v1.2 *ok',
      plainFallback: true,
    });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.json().msg, 'message sent as plain text');
    assert.equal(r.json().data.text, 'v1.2 *ok');
    const [first, second] = fake.received.slice(before);
    assert.equal(first!.params['parse_mode'], 'MarkdownV2');
    assert.deepEqual(second!.params, { chat_id: CHATS.user!.id, text: 'v1.2 *ok' });
    // Other refusals are not retried.
    const nf = await post({ apiKey: BOT.token, chatId: 424242, msgText: 'x', plainFallback: true });
    assert.equal(nf.statusCode, 400);
    assert.equal(fake.received.length, before + 3);
  });

  it('sends the configured default text when msgText is absent (connectivity check)', async () => {
    const r = await post({ apiKey: BOT.token, chatId: `@${CHATS.channel!.username}` });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.json().data.text, 'devutil relay: connectivity check');
    assert.equal(r.json().data.chat.id, CHATS.channel!.id);
  });

  it('answers 400 status 0 naming the field when apiKey or chatId is missing', async () => {
    const before = fake.received.length;
    const a = await post({ chatId: 1, msgText: 'x' });
    assert.equal(a.statusCode, 400);
    assert.equal(a.json().status, 0);
    assert.equal(a.json().data, null);
    assert.match(a.json().msg, /apiKey/);
    const c = await post({ apiKey: BOT.token, msgText: 'x' });
    assert.equal(c.statusCode, 400);
    assert.match(c.json().msg, /chatId/);
    assert.equal(fake.received.length, before, 'nothing reached Telegram');
  });

  it("answers a wrong token with 401 status 0 and Telegram's description", async () => {
    const r = await post({ apiKey: WRONG_KEY, chatId: CHATS.user!.id, msgText: 'x' });
    assert.equal(r.statusCode, 401);
    assert.deepEqual(r.json(), { status: 0, msg: 'Unauthorized', data: null });
    assert.equal(fake.last()!.token, WRONG_KEY);
  });

  it("maps Telegram's 400 chat not found, 403 blocked and the supergroup migration", async () => {
    const nf = await post({ apiKey: BOT.token, chatId: 424242, msgText: 'x' });
    assert.equal(nf.statusCode, 400);
    assert.equal(nf.json().msg, 'Bad Request: chat not found');
    const bl = await post({ apiKey: BOT.token, chatId: CHATS.blocked!.id, msgText: 'x' });
    assert.equal(bl.statusCode, 403);
    assert.equal(bl.json().msg, 'Forbidden: bot was blocked by the user');
    const mg = await post({ apiKey: BOT.token, chatId: CHATS.migrated!.id, msgText: 'x' });
    assert.equal(mg.statusCode, 400);
    assert.match(mg.json().msg, /upgraded to a supergroup chat \(migrate_to_chat_id -1009999999999\)/);
  });

  it("answers Telegram's 429 with 429 and Retry-After from parameters.retry_after", async () => {
    const flooded = { id: 100200399, type: 'private' as const, first_name: 'Flood' };
    fake.chats.push(flooded);
    fake.fault({ kind: 'flood', retryAfter: 7 });
    const r = await post({ apiKey: BOT.token, chatId: flooded.id, msgText: 'x' });
    assert.equal(r.statusCode, 429);
    assert.equal(r.headers['retry-after'], '7');
    assert.deepEqual(r.json(), { status: 0, msg: 'Too Many Requests: retry after 7', data: null });
  });

  it('honours retry_after: that chat gets 429 from the relay itself until it has passed', async () => {
    const before = fake.received.length;
    const r = await post({ apiKey: BOT.token, chatId: 100200399, msgText: 'x' });
    assert.equal(r.statusCode, 429);
    assert.match(r.json().msg, /telegram asked to pause this chat/);
    const left = Number(r.headers['retry-after']);
    assert.ok(left >= 1 && left <= 7, String(left));
    assert.equal(fake.received.length, before, 'Telegram was not called again');
    const other = await post({ apiKey: BOT.token, chatId: CHATS.group!.id, msgText: 'x' });
    assert.equal(other.statusCode, 200, 'other chats are not paused');
  });

  it('answers 504 when Telegram is too slow and 502 when it closes the connection', async () => {
    // An upstream that does not answer at all: the timeout fires whatever the machine's load.
    fake.fault({ kind: 'delay', ms: 600_000 });
    const slow = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' }, {}, impatient);
    assert.equal(slow.statusCode, 504);
    assert.match(slow.json().msg, /did not answer within 1000 ms/);
    fake.fault({ kind: 'close' });
    const closed = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' });
    assert.equal(closed.statusCode, 502);
    assert.match(closed.json().msg, /could not reach telegram/);
  });

  it('answers 502 for an upstream 5xx, an HTML error page and an unreachable upstream', async () => {
    fake.fault({
      kind: 'status',
      status: 500,
      body: '{"ok":false,"error_code":500,"description":"Internal Server Error"}',
    });
    const five = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' });
    assert.equal(five.statusCode, 502);
    assert.equal(five.json().msg, 'telegram failed: Internal Server Error');
    fake.fault({ kind: 'status', status: 502, body: '<html>bad gateway</html>', contentType: 'text/html' });
    const html = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' });
    assert.equal(html.statusCode, 502);
    assert.match(html.json().msg, /HTTP 502 without a Bot API body/);
    const dead = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' }, {}, deadUpstream);
    assert.equal(dead.statusCode, 502);
    assert.deepEqual(Object.keys(dead.json()).sort(), ['data', 'msg', 'status']);
    assert.match(dead.json().msg, /could not reach telegram \(.*ECONNREFUSED/);
  });

  it('names the host and DEVUTIL_EGRESS_PROXY when Telegram is unreachable', async () => {
    const dead = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' }, {}, deadUpstream);
    assert.equal(dead.statusCode, 502);
    assert.match(
      dead.json().msg,
      /^could not reach telegram \(\S+\) at dead\.telegram\.test; if this server reaches Telegram only through a proxy, set DEVUTIL_EGRESS_PROXY$/,
    );
    // Through a proxy that refuses connections: the message names the proxy (never its credentials).
    const closed = CLOSED_PORT;
    const viaProxy = await buildTestServer({
      logs,
      overrides: {
        ...OTHERS_OFF,
        egress: { proxy: `http://ops:pa55word@127.0.0.1:${closed}` },
        telegram: BUDGETS_OFF,
      },
    });
    try {
      const r = await post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'x' }, {}, viaProxy);
      assert.equal(r.statusCode, 502);
      assert.match(
        r.json().msg,
        new RegExp(
          `at api\\.telegram\\.org through the proxy 127\\.0\\.0\\.1:${closed} \\(DEVUTIL_EGRESS_PROXY\\)`,
        ),
      );
      assert.equal(r.body.includes('pa55word'), false);
    } finally {
      await viaProxy.close();
    }
  });

  it('maps the deprecated disable_web_page_preview and reply_to_message_id to the Bot API 7 objects', async () => {
    await post({
      apiKey: BOT.token,
      chatId: CHATS.user!.id,
      msgText: { text: 'x', disable_web_page_preview: true, reply_to_message_id: 5 },
    });
    const p = fake.last()!.params;
    assert.deepEqual(p['link_preview_options'], { is_disabled: true });
    assert.deepEqual(p['reply_parameters'], { message_id: 5 });
    assert.equal('disable_web_page_preview' in p, false);
  });

  it('works end to end with curl over real HTTP', async () => {
    const body = JSON.stringify({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'from curl' });
    const { stdout: out } = await promisify(execFile)(
      'curl',
      [
        '-sS',
        '-H',
        'content-type: application/json',
        '-d',
        body,
        '-w',
        '\n%{http_code}',
        `${srv.url}${URL_PATH}`,
      ],
      { encoding: 'utf8' },
    );
    const [json, code] = out.split('\n');
    assert.equal(code, '200');
    assert.equal(JSON.parse(json!).data.text, 'from curl');
  });

  it('counts upstream calls in /metrics without any key material', async () => {
    const r = await app.inject({ url: '/metrics' });
    assert.match(r.body, /devutil_telegram_upstream_calls_total\{result="ok"\} \d+/);
    assert.match(r.body, /devutil_telegram_upstream_calls_total\{result="401"\} 1/);
    assert.match(r.body, /devutil_telegram_refused_total\{reason="input"\}/);
    assert.equal(r.body.includes(BOT.token.split(':')[1]!), false);
    assert.equal(r.body.includes(WRONG_KEY.split(':')[1]!), false);
  });

  // Runs last: everything above logged through `logs` at debug level.
  it('never writes a bot key to the logs of this whole file', () => {
    const text = logs.text();
    assert.ok(logs.lines.length > 20, 'logs were captured');
    assert.match(text, /message relayed/);
    assert.match(text, /telegram unreachable/);
    for (const key of [BOT.token, WRONG_KEY]) {
      const secret = key.split(':')[1]!;
      assert.equal(text.includes(secret), false, 'secret part of the key found in logs');
      assert.equal(text.includes(encodeURIComponent(key)), false);
    }
  });
});

// ntfy and Gotify publishes on recipient tokens (notify-routes.ts) in the full server composition
// against the Bot API stand-in over real HTTP: each publish form arrives as one HTML message in the
// token's chat and is answered in ntfy's or Gotify's shape; refusals are in that shape with a
// truthful status and reach Telegram never; the token's rules hold (its chat, its methods, revoked
// is revoked); the per-client budget, Telegram's pacing and a chat Telegram paused are the ones
// /r/<token> pays. Also: /r/<bad token> says what is wrong. No token in any log line.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { BOT, CHATS, FakeBotApi } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { parseHtml } from '../../../test/fixtures/telegram/markup.ts';
import { assertNoSecrets } from '../../../test/fixtures/telegram/no-secrets.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../../../test/fixtures/telegram/overrides.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer, LogCapture, tempDir } from '../../../test/helpers/server.ts';

const GROUP = CHATS.group!.id;
const USER = CHATS.user!.id;
const FORGED = `tgr_${'F'.repeat(43)}`;

describe('ntfy and Gotify publish onto recipient tokens', { timeout: 120_000 }, () => {
  registerSecret(BOT.token);
  const logs = new LogCapture();
  const dataDir = tempDir();
  let fake: FakeBotApi;
  let app: FastifyInstance;
  /** The same store, with the per-client budget at 2 a minute and Telegram's per-chat pace at 1. */
  let perClient: FastifyInstance;
  let perChat: FastifyInstance;
  const tokens: Record<'group' | 'user' | 'docs' | 'revoked', string> = {
    group: '',
    user: '',
    docs: '',
    revoked: '',
  };
  let registered: Record<string, unknown> = {};

  before(async () => {
    fake = await FakeBotApi.start();
    const telegram = {
      ...BUDGETS_OFF,
      apiBase: fake.apiBase,
      connectTimeoutMs: 30_000,
      maxBodyBytes: '8KiB',
    };
    const common = { ...OTHERS_OFF, server: { dataDir }, egress: { resolve: [fake.resolve] } };
    const servers: FastifyInstance[] = [];
    try {
      for (const t of [telegram, { ...telegram, rateLimit: '2/min' }, { ...telegram, chatRate: '1/min' }])
        servers.push(await buildTestServer({ logs, overrides: { ...common, telegram: t } }));
    } catch (err) {
      for (const s of servers) await s.close();
      await fake.close();
      throw err;
    }
    [app, perClient, perChat] = servers as [FastifyInstance, FastifyInstance, FastifyInstance];
    const register = async (chat: number, methods: string[], name = 'ci') => {
      const r = await app.inject({
        method: 'POST',
        url: '/telegram/recipients',
        headers: { authorization: `Bearer ${BOT.token}` },
        payload: { chat_id: chat, methods, name },
      });
      assert.equal(r.statusCode, 201, r.body);
      return r.json().result as Record<string, unknown>;
    };
    registered = await register(GROUP, ['sendMessage']);
    tokens.group = registerSecret(registered['token'] as string);
    tokens.user = registerSecret((await register(USER, ['sendMessage'], 'home')).token as string);
    tokens.docs = registerSecret((await register(GROUP, ['sendDocument'])).token as string);
    const gone = await register(GROUP, ['sendMessage']);
    tokens.revoked = registerSecret(gone['token'] as string);
    const del = await app.inject({
      method: 'DELETE',
      url: `/telegram/recipients/${gone['id']}`,
      headers: { authorization: `Bearer ${BOT.token}` },
    });
    assert.equal(del.statusCode, 200);
  });
  after(async () => {
    await perChat?.close();
    await perClient?.close();
    await app?.close();
    await fake?.close();
  });

  /** One call, and what reached Telegram because of it. */
  const call = async (o: InjectOptions, on: FastifyInstance = app) => {
    const n = fake.received.length;
    const res = await on.inject(o);
    return { res, sent: fake.received.slice(n) };
  };
  /** The message Telegram shows for the one sendMessage a call made. */
  const shown = (sent: Awaited<ReturnType<typeof call>>['sent']) => {
    assert.equal(sent.length, 1, 'one message reached Telegram');
    const p = sent[0]!.params;
    assert.equal(sent[0]!.method, 'sendmessage');
    assert.equal(p['parse_mode'], 'HTML');
    return { chat: p['chat_id'], ...parseHtml(p['text'] as string), params: p };
  };

  it('gives the ntfy and Gotify URLs with a new token', () => {
    const urls = registered['urls'] as Record<string, string>;
    assert.equal(urls['ntfy'], `http://localhost:8080/telegram/${tokens.group}`);
    assert.equal(urls['gotify'], `http://localhost:8080/telegram/message?token=${tokens.group}`);
  });

  describe('ntfy', () => {
    it("sends a PUT's body with its title, priority, tags, click and attachment as one message", async () => {
      const { res, sent } = await call({
        method: 'PUT',
        url: `/telegram/${tokens.group}`,
        headers: {
          title: 'Backup <done>',
          priority: 'high',
          tags: 'warning,host-1',
          click: 'https://ci.example.com/42',
          attach: 'https://files.example.com/log.txt',
          'content-type': 'text/plain',
        },
        payload: 'all **good** <b>here</b>',
      });
      assert.equal(res.statusCode, 200, res.body);
      const m = shown(sent);
      assert.equal(m.chat, GROUP);
      assert.equal(
        m.text,
        '⚠️❗ Backup <done>\nall **good** <b>here</b>\n\n🏷 host-1\n🔗 https://ci.example.com/42\n📎 log.txt',
      );
      assert.deepEqual(
        m.entities.map((e) => e.type),
        ['bold', 'text_link', 'text_link'],
      );
      const a = res.json();
      assert.equal(a.event, 'message');
      assert.equal(a.topic, tokens.group);
      assert.deepEqual(
        [a.title, a.message, a.priority, a.tags, a.click, a.attachment],
        [
          'Backup <done>',
          'all **good** <b>here</b>',
          4,
          ['warning', 'host-1'],
          'https://ci.example.com/42',
          { name: 'log.txt', url: 'https://files.example.com/log.txt' },
        ],
      );
      assert.match(a.id, /^[A-Za-z0-9]{12}$/);
      assert.equal(typeof a.time, 'number');
    });

    it('takes options from the query string, Markdown from its header, and a quiet priority silently', async () => {
      const { res, sent } = await call({
        method: 'POST',
        url: `/telegram/${tokens.group}?title=Deploy&tags=tada&p=2`,
        headers: { markdown: 'yes', 'content-type': 'text/plain' },
        payload: '# v1.2\n- **api** done\n- `web` [log](https://ci.example.com/7)',
      });
      assert.equal(res.statusCode, 200, res.body);
      const m = shown(sent);
      assert.equal(m.text, '🎉 Deploy\nv1.2\n• api done\n• web log');
      assert.deepEqual(
        m.entities.map((e) => e.type),
        ['bold', 'bold', 'bold', 'code', 'text_link'],
      );
      assert.equal(m.params['disable_notification'], true);
    });

    it('takes a JSON publish at the server root, with or without its slash', async () => {
      for (const url of ['/telegram', '/telegram/']) {
        const { res, sent } = await call({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          payload: { topic: tokens.group, title: 'JSON', message: '_hi_', markdown: true, tags: ['skull'] },
        });
        assert.equal(res.statusCode, 200, res.body);
        const m = shown(sent);
        assert.equal(m.text, '💀 JSON\nhi');
        assert.equal(res.json().content_type, 'text/markdown');
      }
    });

    it('publishes by GET /<token>/publish, /send and /trigger', async () => {
      for (const action of ['publish', 'send', 'trigger']) {
        const { res, sent } = await call({
          method: 'GET',
          url: `/telegram/${tokens.group}/${action}?message=via+${action}&t=GET`,
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(shown(sent).text, `GET\nvia ${action}`);
      }
    });

    it('sends a text longer than Telegram takes cut to one message of 4096 characters', async () => {
      const { res, sent } = await call({
        method: 'POST',
        url: `/telegram/${tokens.group}`,
        headers: { title: 'long', 'content-type': 'text/plain' },
        payload: 'x<'.repeat(3500),
      });
      assert.equal(res.statusCode, 200, res.body);
      const m = shown(sent);
      assert.equal(m.text.length, 4096);
      assert.ok(m.text.endsWith('x<…') || m.text.endsWith('<x…') || m.text.endsWith('…'));
    });

    it('never lets a header, a query parameter or a JSON field pick another chat or method', async () => {
      const a = await call({
        method: 'POST',
        url: `/telegram/${tokens.group}?chat_id=${USER}&method=sendDocument`,
        headers: { chat_id: String(USER), 'x-chat-id': String(USER), 'content-type': 'text/plain' },
        payload: 'x',
      });
      const b = await call({
        method: 'POST',
        url: '/telegram/',
        headers: { 'content-type': 'application/json' },
        payload: { topic: tokens.group, message: 'y', chat_id: USER, reply_parameters: { chat_id: USER } },
      });
      for (const { res, sent } of [a, b]) {
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(
          sent[0]!.args.map(([k]) => k),
          ['chat_id', 'text', 'parse_mode', 'link_preview_options'],
        );
        assert.equal(shown(sent).chat, GROUP);
      }
    });

    const refusals: [string, () => InjectOptions, number, number, RegExp][] = [
      [
        'a priority ntfy does not know',
        () => text(tokens.group, { priority: 'loud' }),
        400,
        40007,
        /priority/,
      ],
      [
        'an uploaded attachment',
        () => text(tokens.group, { filename: 'a.log' }),
        400,
        40014,
        /Attach: <url>/,
      ],
      [
        'an attachment URL that is not http(s)',
        () => text(tokens.group, { attach: 'file:///etc/passwd' }),
        400,
        40013,
        /attachment URL/,
      ],
      ['e-mail', () => text(tokens.group, { email: 'a@b.example' }), 400, 40001, /e-mail/],
      ['scheduled delivery', () => text(tokens.group, { delay: '30m' }), 400, 40000, /scheduled/],
      ['a forged token', () => text(FORGED), 401, 40101, /unknown or revoked/],
      ['a revoked token', () => text(tokens.revoked), 401, 40101, /unknown or revoked/],
      ['a topic that is no token', () => text('tgr_short'), 404, 40401, /not a recipient token/],
      ['a token without sendMessage', () => text(tokens.docs), 403, 40301, /may call only sendDocument/],
      [
        'a JSON publish to no token',
        () => json('/telegram', { topic: 'alerts', message: 'x' }),
        404,
        40401,
        /not a recipient token/,
      ],
      [
        'a JSON publish naming its topic twice',
        () => ({ ...json('/telegram', {}), payload: `{"topic":"${tokens.group}","topic":"${tokens.user}"}` }),
        400,
        40024,
        /given twice|duplicate/i,
      ],
      [
        'a body over the cap',
        () => ({ ...text(tokens.group), payload: 'x'.repeat(9000) }),
        413,
        41301,
        /large/,
      ],
    ];
    for (const [what, req, status, code, message] of refusals)
      it(`refuses ${what} with ${status} in ntfy's shape, before Telegram hears of it`, async () => {
        const { res, sent } = await call(req());
        assert.equal(res.statusCode, status, res.body);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        const e = res.json();
        assert.deepEqual([e.code, e.http], [code, status]);
        assert.match(e.error, message);
        assert.equal(sent.length, 0);
      });
  });

  const text = (token: string, headers: Record<string, string> = {}): InjectOptions => ({
    method: 'POST',
    url: `/telegram/${token}`,
    headers: { 'content-type': 'text/plain', ...headers },
    payload: 'x',
  });
  const json = (url: string, payload: unknown, headers: Record<string, string> = {}): InjectOptions => ({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(payload),
  });

  describe('Gotify', () => {
    it('sends JSON with extras (Markdown, a click URL) and answers with the created message', async () => {
      const extras = {
        'client::display': { contentType: 'text/markdown' },
        'client::notification': { click: { url: 'https://ha.example.com' } },
      };
      const { res, sent } = await call(
        json(
          '/telegram/message',
          { title: 'Door', message: 'front door **open**', priority: 8, extras },
          {
            'x-gotify-key': tokens.group,
          },
        ),
      );
      assert.equal(res.statusCode, 200, res.body);
      const m = shown(sent);
      assert.equal(m.chat, GROUP);
      assert.equal(m.text, '❗ Door\nfront door open\n\n🔗 https://ha.example.com');
      const a = res.json();
      assert.deepEqual(
        [a.title, a.message, a.priority, a.extras],
        ['Door', 'front door **open**', 8, extras],
      );
      assert.equal(typeof a.id, 'number');
      assert.equal(typeof a.appid, 'number');
      assert.ok(!Number.isNaN(Date.parse(a.date)));
    });

    it("takes a form with ?token= and names a message without a title after the token's name", async () => {
      const { res, sent } = await call({
        method: 'POST',
        url: `/telegram/message?token=${tokens.user}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'message=washing+done&priority=2',
      });
      assert.equal(res.statusCode, 200, res.body);
      const m = shown(sent);
      assert.equal(m.chat, USER);
      assert.equal(m.text, 'home\nwashing done');
      assert.equal(m.params['disable_notification'], true);
      assert.equal(res.json().title, 'home');
    });

    it('takes multipart fields with Authorization: Bearer', async () => {
      const b = 'gotifyBoundary';
      const { res, sent } = await call({
        method: 'POST',
        url: '/telegram/message',
        headers: {
          authorization: `Bearer ${tokens.group}`,
          'content-type': `multipart/form-data; boundary=${b}`,
        },
        payload: ['title', 'message']
          .map((k) => `--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\nmy ${k}\r\n`)
          .join('')
          .concat(`--${b}--\r\n`),
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(shown(sent).text, 'my title\nmy message');
    });

    const refusals: [string, () => InjectOptions, number, RegExp][] = [
      ['no token', () => json('/telegram/message', { message: 'x' }), 401, /valid access token/],
      [
        'a Gotify token',
        () => json('/telegram/message?token=AbCdEf0123456', { message: 'x' }),
        401,
        /not a recipient token/,
      ],
      [
        'a forged token',
        () => json(`/telegram/message?token=${FORGED}`, { message: 'x' }),
        401,
        /unknown or revoked/,
      ],
      [
        'two different tokens',
        () =>
          json(`/telegram/message?token=${tokens.group}`, { message: 'x' }, { 'x-gotify-key': tokens.user }),
        400,
        /twice/,
      ],
      [
        'no message',
        () => json(`/telegram/message?token=${tokens.group}`, { title: 'x' }),
        400,
        /'message' is required/,
      ],
      [
        'a token without sendMessage',
        () => json(`/telegram/message?token=${tokens.docs}`, { message: 'x' }),
        403,
        /sendDocument/,
      ],
      [
        'XML',
        () => ({
          ...json(`/telegram/message?token=${tokens.group}`, {}),
          headers: { 'content-type': 'application/xml' },
          payload: '<m/>',
        }),
        415,
        /JSON/,
      ],
    ];
    for (const [what, req, status, message] of refusals)
      it(`refuses ${what} with ${status} in Gotify's shape, before Telegram hears of it`, async () => {
        const { res, sent } = await call(req());
        assert.equal(res.statusCode, status, res.body);
        const e = res.json();
        assert.deepEqual([e.errorCode, typeof e.error], [status, 'string']);
        assert.match(e.errorDescription, message);
        assert.equal(sent.length, 0);
      });
  });

  describe('budgets: the ones /r/<token> pays', () => {
    it("stops a client past the per-client budget in each protocol's shape, /r/ included", async () => {
      const ok1 = await call(text(tokens.group), perClient);
      const ok2 = await call(json(`/telegram/message?token=${tokens.group}`, { message: 'x' }), perClient);
      assert.deepEqual([ok1.res.statusCode, ok2.res.statusCode], [200, 200]);
      const ntfy = await call(text(tokens.group), perClient);
      const gotify = await call(json(`/telegram/message?token=${tokens.group}`, { message: 'x' }), perClient);
      const r = await call(
        {
          method: 'POST',
          url: `/telegram/r/${tokens.group}`,
          headers: { 'content-type': 'text/plain' },
          payload: 'x',
        },
        perClient,
      );
      for (const c of [ntfy, gotify, r]) {
        assert.equal(c.res.statusCode, 429, c.res.body);
        assert.ok(Number(c.res.headers['retry-after']) > 0);
        assert.equal(c.sent.length, 0);
      }
      assert.equal(ntfy.res.json().code, 42901);
      assert.equal(gotify.res.json().errorCode, 429);
      assert.equal(r.res.json().error_code, 429);
    });

    it("applies Telegram's per-chat pace across ntfy, Gotify and /r/ alike", async () => {
      assert.equal((await call(text(tokens.user), perChat)).res.statusCode, 200);
      const gotify = await call(json(`/telegram/message?token=${tokens.user}`, { message: 'x' }), perChat);
      assert.equal(gotify.res.statusCode, 429, gotify.res.body);
      assert.match(gotify.res.json().errorDescription, /per-chat pace/);
      assert.equal(gotify.sent.length, 0);
      const r = await call(
        {
          method: 'POST',
          url: `/telegram/r/${tokens.user}`,
          headers: { 'content-type': 'text/plain' },
          payload: 'x',
        },
        perChat,
      );
      assert.equal(r.res.statusCode, 429, r.res.body);
      assert.match(r.res.json().description, /per-chat pace/);
    });

    it("answers Telegram's flood control in ntfy's shape, then holds the chat for every inlet", async () => {
      fake.fault({ kind: 'flood', retryAfter: 30 });
      const first = await call(text(tokens.user));
      assert.equal(first.res.statusCode, 429, first.res.body);
      assert.equal(first.res.headers['retry-after'], '30');
      assert.equal(first.res.json().code, 42901);
      const later = await call(json(`/telegram/message?token=${tokens.user}`, { message: 'x' }));
      assert.equal(later.res.statusCode, 429);
      assert.match(later.res.json().errorDescription, /retry_after/);
      assert.equal(later.sent.length, 0, 'the paused chat is answered here');
    });
  });

  describe('/r/<token> with something else in its place', () => {
    const cases: [string, () => string, number, RegExp][] = [
      ['a bot key', () => BOT.token, 404, /this is a bot key, not a recipient token/],
      ['not a token at all', () => 'hello', 404, /not a recipient token \(tgr_ and 43/],
      ['a forged token', () => FORGED, 401, /unknown or revoked recipient token/],
      ['a revoked token', () => tokens.revoked, 401, /unknown or revoked recipient token/],
    ];
    for (const [what, token, status, message] of cases)
      it(`says what is wrong with ${what} (${status})`, async () => {
        const { res, sent } = await call({
          method: 'POST',
          url: `/telegram/r/${token()}`,
          headers: { 'content-type': 'text/plain' },
          payload: 'x',
        });
        assert.equal(res.statusCode, status, res.body);
        assert.match(res.json().description, message);
        assert.ok(!res.body.includes(BOT.token.split(':')[1]!), 'the key is not echoed');
        assert.equal(sent.length, 0);
      });
  });

  it('counts each inlet by name in the metrics', async () => {
    const m = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(m, /devutil_telegram_api_calls_total\{kind="ntfy",result="ok"\}/);
    assert.match(m, /devutil_telegram_api_calls_total\{kind="gotify",result="ok"\}/);
  });

  it('never writes a token to the logs, also when its path spells it percent-encoded', async () => {
    const encoded = tokens.group.replace('_', '%5F');
    const { res } = await call({ ...text(tokens.group), url: `/telegram/${encoded}` });
    assert.equal(res.statusCode, 200, res.body);
    assertNoSecrets(logs.text(), Object.values(tokens));
    assert.equal(logs.text().includes(encoded), false);
  });
});

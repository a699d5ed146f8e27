// Issue 26, acceptance 1: grammY, configured with nothing but devutil's base URL, against a Bot API
// stand-in serving https://api.telegram.org (devutil's default upstream, reached through an egress
// override and a test CA): a message, a document upload (and its download), a long-polling
// getUpdates round with a handler that answers; a recipient token that sends to its chat and
// nowhere else; an Alertmanager webhook that arrives as a message. No key or token reaches a log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Bot, GrammyError, InputFile } from 'grammy';
import { makePki } from '../fixtures/proxy/tls.ts';
import { BOT, CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { assertNoSecrets } from '../fixtures/telegram/no-secrets.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../fixtures/telegram/overrides.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { waitFor } from '../helpers/wait.ts';

// Alertmanager's webhook (version 4) as it posts it: two alerts of one group, one firing one resolved.
const ALERTS = {
  version: '4',
  groupKey: '{}:{alertname="DiskFull"}',
  truncatedAlerts: 0,
  status: 'firing',
  receiver: 'telegram-ops',
  groupLabels: { alertname: 'DiskFull' },
  commonLabels: { alertname: 'DiskFull', job: 'node', severity: 'critical' },
  commonAnnotations: {},
  externalURL: 'http://alertmanager.example:9093',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'DiskFull', job: 'node', severity: 'critical', instance: 'db-1:9100' },
      annotations: {
        summary: 'Disk almost full on db-1',
        description: '/var is 97% full (< 3% left) & rising',
      },
      startsAt: '2026-05-01T10:00:00.000Z',
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus.example:9090/graph?g0.expr=disk&g0.tab=1',
      fingerprint: 'a1b2c3d4e5f60718',
    },
    {
      status: 'resolved',
      labels: { alertname: 'DiskFull', job: 'node', severity: 'critical', instance: 'web-2:9100' },
      annotations: { summary: 'Disk almost full on web-2' },
      startsAt: '2026-05-01T09:00:00.000Z',
      endsAt: '2026-05-01T09:30:00.000Z',
      generatorURL: 'http://prometheus.example:9090/graph?g0.expr=disk',
      fingerprint: '0f1e2d3c4b5a6978',
    },
  ],
};

describe('a Telegram bot library against the Bot API base URL', {
  skip: toolSkip('openssl', ['version']),
  timeout: 180_000,
}, () => {
  registerSecret(BOT.token);
  const logs = new LogCapture();
  let fake: FakeBotApi;
  let srv: Running;
  let apiRoot: string;
  let token = '';

  before(async () => {
    const pki = makePki(tempDir(), ['api.telegram.org']);
    fake = await FakeBotApi.start({ tls: pki });
    assert.equal(fake.apiBase, 'https://api.telegram.org');
    try {
      srv = await startTestServer({
        logs,
        overrides: {
          ...OTHERS_OFF,
          egress: { resolve: [fake.resolve] },
          // apiBase stays the default, https://api.telegram.org.
          telegram: { ...BUDGETS_OFF, upstreamCa: pki.caFile, connectTimeoutMs: 30_000 },
        },
      });
    } catch (err) {
      await fake.close();
      throw err;
    }
    apiRoot = `${srv.url}/telegram`;
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  const bot = (t = BOT.token) => new Bot(t, { client: { apiRoot } });

  it('sends a message with grammY through devutil to api.telegram.org', async () => {
    const m = await bot().api.sendMessage(CHATS.user!.id, 'hello *from* grammY', {
      parse_mode: 'MarkdownV2',
    });
    assert.equal(m.text, 'hello from grammY');
    assert.deepEqual(
      m.entities?.map((e) => e.type),
      ['bold'],
    );
    const got = fake.last()!;
    assert.equal(got.method, 'sendmessage');
    assert.equal(got.token, BOT.token);
    assert.equal(got.params['chat_id'], CHATS.user!.id);
  });

  it('uploads a document (multipart, streamed) and downloads it back byte for byte', async () => {
    const data = randomBytes(300 * 1024);
    const b = bot();
    const m = await b.api.sendDocument(CHATS.user!.id, new InputFile(data, 'report.bin'), {
      caption: 'nightly',
    });
    assert.equal(m.document?.file_name, 'report.bin');
    assert.equal(m.caption, 'nightly');
    const got = fake.last()!;
    assert.equal(got.contentType, 'multipart/form-data');
    const part = Object.values(got.files)[0]!;
    assert.ok(part.data.equals(data), 'Telegram received the bytes grammY sent');

    const f = await b.api.getFile(m.document!.file_id);
    const res = await fetch(`${apiRoot}/file/bot${BOT.token}/${f.file_path}`);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data), 'download is byte-identical');
    const range = await fetch(`${apiRoot}/file/bot${BOT.token}/${f.file_path}`, {
      headers: { range: 'bytes=10-19' },
    });
    assert.equal(range.status, 206);
    assert.ok(Buffer.from(await range.arrayBuffer()).equals(data.subarray(10, 20)));
  });

  it('runs a long-polling getUpdates round: the poll waits, an update arrives, the handler answers', async () => {
    const b = bot();
    const replied = new Promise<string>((resolve) => {
      b.on('message:text', async (ctx) => {
        const r = await ctx.reply(`pong: ${ctx.message.text}`);
        resolve(r.text ?? '');
      });
    });
    const sentBefore = fake.received.length;
    const running = b.start({ timeout: 30 });
    // The update arrives while the long poll is held open upstream.
    await waitFor(
      () =>
        fake.received.slice(sentBefore).some((r) => r.method === 'getupdates' && r.params['timeout'] === 30),
      'a long poll of 30 s',
    );
    await new Promise((r) => setTimeout(r, 200));
    fake.pushUpdate({
      message: {
        message_id: 77,
        date: Math.floor(Date.now() / 1000),
        chat: { id: CHATS.user!.id, type: 'private', first_name: 'Ada' },
        from: { id: CHATS.user!.id, is_bot: false, first_name: 'Ada' },
        text: 'ping',
      },
    });
    assert.equal(await replied, 'pong: ping');
    await b.stop();
    await running;
    const delivered = fake.polls.find((p) => p.answered === 1);
    assert.equal(delivered?.timeout, 30, 'the update came on a long poll of 30 s');
    assert.equal(fake.last()!.method === 'getupdates' || fake.last()!.method === 'sendmessage', true);
  });

  it('registers a recipient token with the bot key; it sends to its chat and nowhere else', async () => {
    const reg = await fetch(`${apiRoot}/recipients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BOT.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        chat_id: CHATS.group!.id,
        name: 'ci',
        methods: ['sendMessage', 'sendDocument'],
      }),
    });
    assert.equal(reg.status, 201);
    const body = (await reg.json()) as { ok: boolean; result: Record<string, unknown> };
    token = registerSecret(String(body.result['token']));
    assert.match(token, /^tgr_[A-Za-z0-9_-]{43}$/);
    assert.equal(body.result['chat_id'], CHATS.group!.id);
    assert.equal((body.result['urls'] as { message: string }).message, `${apiRoot}/r/${token}`);

    // A plain curl-style call: the text arrives in the group.
    const sent = await fetch(`${apiRoot}/r/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'deploy 42 done',
    });
    assert.equal(sent.status, 200);
    assert.equal(fake.last()!.token, BOT.token);
    assert.deepEqual(fake.last()!.params, { chat_id: CHATS.group!.id, text: 'deploy 42 done' });

    // The token as a grammY "bot token": its chat works, any other chat or method is refused
    // before Telegram hears of it.
    const rb = bot(token);
    const ok = await rb.api.sendMessage(CHATS.group!.id, 'via grammY');
    assert.equal(ok.chat.id, CHATS.group!.id);
    const before = fake.received.length;
    for (const attempt of [
      () => rb.api.sendMessage(CHATS.user!.id, 'elsewhere'),
      () => rb.api.sendMessage(`@${CHATS.channel!.username}`, 'elsewhere'),
      () => rb.api.getUpdates(),
      () => rb.api.getChat(CHATS.group!.id),
      () => rb.api.forwardMessage(CHATS.group!.id, CHATS.user!.id, 1),
      () => rb.api.sendDocument(CHATS.user!.id, new InputFile(Buffer.from('x'), 'x.txt')),
      () =>
        rb.api.sendMessage(CHATS.group!.id, 'quote', {
          reply_parameters: { message_id: 1, chat_id: CHATS.user!.id },
        }),
    ]) {
      await assert.rejects(attempt(), (err: unknown) => err instanceof GrammyError && err.error_code === 403);
    }
    assert.equal(fake.received.length, before, 'nothing reached Telegram');
    // An upload to its own chat goes through, the chat filled in by devutil.
    const doc = await rb.api.sendDocument(
      CHATS.group!.id,
      new InputFile(Buffer.from('log line\n'), 'ci.log'),
    );
    assert.equal(doc.chat.id, CHATS.group!.id);
    assert.equal(fake.last()!.params['chat_id'], String(CHATS.group!.id));
  });

  it('turns an Alertmanager webhook into one readable message in the token chat', async () => {
    const r = await fetch(`${apiRoot}/r/${token}/alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'Alertmanager/0.28.1' },
      body: JSON.stringify(ALERTS),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const got = fake.last()!;
    assert.equal(got.params['chat_id'], CHATS.group!.id);
    assert.equal(got.params['parse_mode'], 'HTML');
    const shown = (fake.lastSent as { text: string }).text;
    assert.match(shown, /FIRING: 1 \(resolved: 1\) · DiskFull/);
    assert.match(shown, /Disk almost full on db-1/);
    assert.match(shown, /\/var is 97% full \(< 3% left\) & rising/);
    assert.match(shown, /instance=db-1:9100/);
    assert.match(shown, /since 2026-05-01 10:00 UTC/);
    assert.match(shown, /Disk almost full on web-2/);
  });

  it('revokes the token: it sends nothing any more', async () => {
    const list = await fetch(`${apiRoot}/recipients`, { headers: { authorization: `Bearer ${BOT.token}` } });
    const items = ((await list.json()) as { result: { id: string; chat_id: number }[] }).result;
    assert.equal(items.length, 1);
    assert.equal(items[0]!.chat_id, CHATS.group!.id);
    const del = await fetch(`${apiRoot}/recipients/${items[0]!.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${BOT.token}` },
    });
    assert.equal(del.status, 200);
    const r = await fetch(`${apiRoot}/r/${token}`, {
      method: 'POST',
      body: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(r.status, 401);
  });

  it('never writes the bot key or a recipient token to the logs', () =>
    assertNoSecrets(logs.text(), [token]));
});

// Recipient tokens without HTTP: what a token's call may say (recipient-rules.ts, multipart included),
// the store (the bot key sealed, never the token on disk, forged and revoked tokens, both caps), the
// Bot API body helpers (api-body.ts) and the Alertmanager message (alertmanager.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BOT } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { parseHtml } from '../../../test/fixtures/telegram/markup.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { FsBlobStore } from '../../infra/storage/fs.ts';
import { formatAlerts } from './alertmanager.ts';
import { bodyParams, chatRef, encodingOf, longPollTimeout } from './api-body.ts';
import { isMessage, recipientMethod } from './methods.ts';
import { Ambiguous, confine, RecipientParams, Refused } from './recipient-params.ts';
import { confineMultipart, type Part } from './recipient-rules.ts';
import { RecipientLimit, RecipientStore } from './recipients.ts';

const CHAT = '-4001234567';

describe('recipient rules', () => {
  const confined = (params: Record<string, unknown>, method = 'sendMessage') =>
    confine(method, CHAT, Object.entries(params));

  it('fills in its chat and accepts its own chat in any spelling Telegram reads the same', () => {
    assert.deepEqual(confined({ text: 'x' }), { chat_id: -4001234567, text: 'x' });
    assert.deepEqual(confined({ text: 'x', chat_id: ' -4001234567' }).chat_id, -4001234567);
    assert.deepEqual(confined({ chat_id: -4001234567 }).chat_id, -4001234567);
  });

  it("passes each method's own parameters and nothing else", () => {
    assert.deepEqual(
      confined({
        text: 'x',
        parse_mode: 'HTML',
        method: 'sendMessage',
        caption: 'c',
        allow_paid_broadcast: true,
      }),
      { chat_id: -4001234567, text: 'x', parse_mode: 'HTML' },
    );
    assert.deepEqual(confined({ action: 'typing', text: 'x', reply_parameters: '{}' }, 'sendChatAction'), {
      chat_id: -4001234567,
      action: 'typing',
    });
  });

  const refused: [string, Record<string, unknown>][] = [
    ['another numeric chat', { chat_id: 100200300 }],
    ['another chat as text', { chat_id: '100200300' }],
    ['a @username', { chat_id: '@devutil_releases' }],
    ['a float', { chat_id: -4001234567.5 }],
    ['an array', { chat_id: [-4001234567] }],
    ['an object', { chat_id: { id: -4001234567 } }],
    ['null', { chat_id: null }],
    ['the id with a suffix', { chat_id: '-4001234567\r\n' + '1' }],
    ['fullwidth digits', { chat_id: '－４００１２３４５６７' }],
    ['a reply quoting another chat', { reply_parameters: { message_id: 1, chat_id: 1 } }],
    [
      'a reply quoting another chat as JSON text',
      { reply_parameters: '{"message_id":1,"chat_id":"@x_y_z"}' },
    ],
    ['a business connection', { business_connection_id: 'abc' }],
    ['a business connection on a method without one', { business_connection_id: 'abc', action: 'typing' }],
  ];
  for (const [what, params] of refused)
    it(`refuses ${what} (403)`, () => assert.throws(() => confined({ text: 'x', ...params }), Refused));

  const ambiguous: [string, [string, unknown][]][] = [
    [
      'a name given twice',
      [
        ['chat_id', CHAT],
        ['chat_id', CHAT],
      ],
    ],
    ['a name with a parameter list in it', [['x; name=reply_parameters; y=', '{}']]],
    ['a name with a quote', [['text"', 'x']]],
    ['a name with a percent escape', [['reply%5Fparameters', '{}']]],
    ['an empty name', [['', 'x']]],
    [
      'a reply as JSON text with two chat_id',
      [['reply_parameters', '{"chat_id":100200300,"chat_id":-4001234567}']],
    ],
    [
      'a duplicate key deep in reply_markup',
      [['reply_markup', '{"inline_keyboard":[[{"text":"a","text":"b"}]]}']],
    ],
    ['a reply that is not JSON', [['reply_parameters', '{chat_id: 1}']]],
    ['a reply that is a list', [['reply_parameters', '[1]']]],
  ];
  for (const [what, entries] of ambiguous)
    it(`refuses ${what} as ambiguous (400)`, () =>
      assert.throws(() => confine('sendMessage', CHAT, [['text', 'x'], ...entries]), Ambiguous));

  it('lets a reply quote a message of its own chat, its chat_id written as devutil writes it', () => {
    const p = confined({ text: 'x', reply_parameters: '{"message_id": 3, "chat_id": "-4001234567"}' });
    assert.deepEqual(p['reply_parameters'], { message_id: 3, chat_id: -4001234567 });
  });

  async function* parts(list: Part[]): AsyncIterable<Part> {
    for (const p of list) yield p;
  }
  const file = (data: Buffer, fieldname = 'document'): Part => ({
    type: 'file',
    fieldname,
    filename: 'a"\r\nX-Evil: 1; name=chat_id; %22.txt',
    mimetype: 'text/plain',
    file: (async function* () {
      yield data;
    })(),
  });
  const field = (fieldname: string, value: string, mimetype = 'text/plain'): Part => ({
    type: 'field',
    fieldname,
    mimetype,
    value,
  });
  async function collect(body: AsyncIterable<Buffer>): Promise<Buffer> {
    const out: Buffer[] = [];
    for await (const c of body) out.push(c);
    return Buffer.concat(out);
  }
  /** As the gateway does it: the query's parameters through the rules first, then the parts. */
  const upload = (list: Part[], query: Record<string, unknown> = {}, method = 'sendDocument') => {
    const rules = new RecipientParams(method, CHAT);
    return confineMultipart(parts(list), rules, rules.addAll(Object.entries(query)));
  };

  it('writes a multipart body anew: its chat first, the query next, the client chat_id dropped, file names unbendable', async () => {
    const m = upload(
      [
        field('chat_id', CHAT),
        field('caption', 'c'),
        field('method', 'sendDocument'),
        file(Buffer.from('DATA')),
      ],
      { disable_notification: 'true' },
    );
    const text = (await collect(m.body)).toString();
    const boundary = /boundary=(\S+)/.exec(m.contentType)![1]!;
    assert.equal(text.split('name="chat_id"').length, 2, 'one chat_id');
    assert.ok(text.indexOf('name="chat_id"') < text.indexOf('name="disable_notification"'));
    assert.ok(text.indexOf('name="disable_notification"') < text.indexOf('name="caption"'));
    assert.equal(text.includes('name="method"'), false, 'not a parameter of sendDocument');
    assert.match(
      text,
      /filename="a___X-Evil: 1_ name=chat_id_ _22\.txt"\r\nContent-Type: text\/plain\r\n\r\nDATA\r\n/,
    );
    assert.ok(text.endsWith(`--${boundary}--\r\n`));
    assert.equal(m.failure(), null);
  });

  const badUploads: [string, () => Part[], typeof Refused | typeof Ambiguous][] = [
    ['a later field naming another chat', () => [file(Buffer.from('DATA')), field('chat_id', '1')], Refused],
    ['a field that is a business connection', () => [field('business_connection_id', 'b')], Refused],
    [
      'a field name with a parameter list',
      () => [field('x; name=reply_parameters; y=', '{"chat_id":1}')],
      Ambiguous,
    ],
    ['a field given twice', () => [field('caption', 'a'), field('caption', 'b')], Ambiguous],
    ['a field the query gave already', () => [field('disable_notification', 'false')], Ambiguous],
    [
      'a field and a file of one name',
      () => [field('document', 'attach://document'), file(Buffer.from('x'))],
      Ambiguous,
    ],
    ['a file named like a text parameter', () => [file(Buffer.from('x'), 'reply_parameters')], Ambiguous],
    [
      'a file named business_connection_id',
      () => [file(Buffer.from('x'), 'business_connection_id')],
      Refused,
    ],
    [
      'a field Telegram expands into parameters',
      () => [field('caption', 'chat_id=1', 'application/x-www-form-urlencoded')],
      Ambiguous,
    ],
    [
      'a field without a filename sent as application/octet-stream',
      () => [field('caption', 'x', 'application/octet-stream')],
      Ambiguous,
    ],
  ];
  for (const [what, list, kind] of badUploads)
    it(`ends a multipart body on ${what}`, async () => {
      const m = upload(list(), { disable_notification: 'true' });
      await assert.rejects(collect(m.body), kind);
      assert.ok(m.failure() instanceof kind);
    });
});

describe('recipient store', () => {
  const store = async () => {
    const dir = tempDir();
    const blobs = new FsBlobStore(dir);
    await blobs.init();
    return { dir, s: new RecipientStore(blobs) };
  };
  const caps = { perBot: 3, total: 4 };
  const r = { chat: CHAT, chatTitle: 'Ops', name: 'ci', methods: ['sendMessage'] };

  function filesUnder(dir: string): string[] {
    return readdirSync(dir).flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? filesUnder(p) : [p];
    });
  }

  it('resolves a token to its chat and bot key; the store holds neither the token nor the key in clear', async () => {
    const { dir, s } = await store();
    const { token, recipient } = await s.create(BOT.token, r, caps);
    assert.match(token, /^tgr_[A-Za-z0-9_-]{43}$/);
    const got = await s.resolve(token);
    assert.equal(got?.botKey, BOT.token);
    assert.equal(got?.recipient.chat, CHAT);
    assert.equal(got?.recipient.id, recipient.id);
    const stored = filesUnder(dir)
      .map((f) => `${f}\n${readFileSync(f, 'latin1')}`)
      .join('\n');
    assert.equal(stored.includes(token.slice(4)), false, 'the token is not stored');
    assert.equal(stored.includes(BOT.token.split(':')[1]!), false, 'the bot key is sealed');
  });

  it('resolves nothing for a forged, altered or revoked token, and lists without tokens', async () => {
    const { s } = await store();
    const { token, recipient } = await s.create(BOT.token, r, caps);
    assert.equal(await s.resolve(`tgr_${'A'.repeat(43)}`), null);
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    assert.equal(await s.resolve(flipped), null);
    assert.equal(await s.resolve(`${token}x`), null);
    const list = await s.list(BOT.token);
    assert.deepEqual(
      list.map((x) => x.id),
      [recipient.id],
    );
    assert.equal(JSON.stringify(list).includes(token.slice(4)), false);
    assert.deepEqual(await s.list('7099999999:AAOtherOtherOtherOtherOtherOtherOth'), []);
    // Only the bot that made it can revoke it.
    assert.equal(await s.revoke('7099999999:AAOtherOtherOtherOtherOtherOtherOth', recipient.id), false);
    assert.equal(await s.revoke(BOT.token, '../../etc/passwd'), false);
    assert.equal(await s.revoke(BOT.token, recipient.id), true);
    assert.equal(await s.resolve(token), null);
    assert.deepEqual(await s.list(BOT.token), []);
  });

  it('refuses a token past the per-bot cap and past the server cap', async () => {
    const { s } = await store();
    for (let i = 0; i < 3; i++) await s.create(BOT.token, r, caps);
    await assert.rejects(s.create(BOT.token, r, caps), RecipientLimit);
    await s.create('7099999999:AAOtherOtherOtherOtherOtherOtherOth', r, caps);
    await assert.rejects(
      s.create('7088888888:AAThirdThirdThirdThirdThirdThirdThi', r, caps),
      /server holds 4/,
    );
  });
});

describe('Bot API bodies and methods', () => {
  it('reads the encodings the Bot API takes and nothing else', () => {
    assert.equal(encodingOf('application/json; charset=utf-8', true), 'json');
    assert.equal(encodingOf('Application/X-WWW-Form-URLEncoded', true), 'form');
    assert.equal(encodingOf('multipart/form-data; boundary=x', true), 'multipart');
    assert.equal(encodingOf(undefined, false), 'none');
    assert.equal(encodingOf('text/plain', true), null);
    assert.throws(() => bodyParams('json', Buffer.from('[1]')), /object/);
    assert.throws(() => bodyParams('json', Buffer.from('"x"')), /object/);
    assert.deepEqual(bodyParams('form', Buffer.from('a=1&b=%F0%9F%98%80')), { a: '1', b: '😀' });
  });

  it('reads chat references as Telegram does, and nothing that merely looks like one', () => {
    assert.equal(chatRef(-1001234567890), '-1001234567890');
    assert.equal(chatRef('@some_channel'), '@some_channel');
    for (const bad of [1.5, Number.MAX_SAFE_INTEGER + 2, '@a', '1 2', '１２', '@x/y', true, null, [1]])
      assert.equal(chatRef(bad), null, String(bad));
  });

  it('caps a long poll in the encoding the client used', () => {
    const q = new URLSearchParams('timeout=600&offset=3');
    const a = longPollTimeout('none', {}, q, 50);
    assert.equal(a.sec, 50);
    assert.equal(a.query?.get('timeout'), '50');
    assert.equal(a.query?.get('offset'), '3');
    const j = longPollTimeout('json', { timeout: 600 }, new URLSearchParams(), 50);
    assert.deepEqual(j.body, { timeout: 50 });
    assert.equal(longPollTimeout('json', { timeout: 10 }, new URLSearchParams(), 50).sec, 10);
    assert.equal(longPollTimeout('json', { timeout: -5 }, new URLSearchParams(), 50).sec, 0);
    assert.equal(longPollTimeout('json', { timeout: 'x' }, new URLSearchParams(), 50).sec, 0);
  });

  it('knows which methods are messages and which a recipient token may be given', () => {
    for (const m of ['sendMessage', 'SENDDOCUMENT', 'copyMessage', 'forwardMessages'])
      assert.ok(isMessage(m), m);
    for (const m of ['sendChatAction', 'getUpdates', 'getFile']) assert.equal(isMessage(m), false, m);
    assert.equal(recipientMethod('SendPhoto'), 'sendPhoto');
    for (const m of ['getUpdates', 'forwardMessage', 'copyMessage', 'setWebhook', 'sendMessage2'])
      assert.equal(recipientMethod(m), null, m);
  });
});

describe('Alertmanager webhook message', () => {
  const alert = (i: number, status = 'firing', extra: Record<string, unknown> = {}) => ({
    status,
    labels: { alertname: 'HighLoad', instance: `node-${i}:9100`, severity: 'warning' },
    annotations: { summary: `load high on node-${i}`, description: 'load > 10 <for 5m> & rising' },
    startsAt: '2026-05-01T10:00:00Z',
    endsAt: '0001-01-01T00:00:00Z',
    generatorURL: 'http://prom.example/graph?g0.expr=load&x="y"',
    ...extra,
  });
  const hook = (alerts: unknown[], extra: Record<string, unknown> = {}) => ({
    version: '4',
    status: 'firing',
    receiver: 'ops',
    groupLabels: { alertname: 'HighLoad' },
    commonLabels: { alertname: 'HighLoad', severity: 'warning' },
    commonAnnotations: {},
    externalURL: 'http://am.example:9093',
    alerts,
    ...extra,
  });

  it('is valid Telegram HTML with the text of labels and annotations escaped, not interpreted', () => {
    const text = formatAlerts(
      hook([alert(1, 'firing', { labels: { alertname: 'HighLoad', team: '<b>ops</b>&' } })]),
    );
    const parsed = parseHtml(text);
    assert.match(parsed.text, /FIRING: 1 · HighLoad/);
    assert.match(parsed.text, /load > 10 <for 5m> & rising/);
    assert.match(parsed.text, /team=<b>ops<\/b>&/);
    assert.match(
      text,
      /<a href="http:\/\/prom\.example\/graph\?g0\.expr=load&amp;x=&quot;y&quot;">source<\/a>/,
    );
  });

  it('stays within 4096 characters for 500 alerts, leaving whole alerts out and counting them', () => {
    const text = formatAlerts(
      hook(
        Array.from({ length: 500 }, (_, i) => alert(i)),
        { truncatedAlerts: 20 },
      ),
    );
    assert.ok(text.length <= 4096, String(text.length));
    const shown = (text.match(/load high on node-/g) ?? []).length;
    assert.ok(shown > 3);
    assert.match(text, new RegExp(`… and ${520 - shown} more alerts`));
    parseHtml(text);
  });

  it('keeps huge labels and annotations bounded', () => {
    const big = 'x'.repeat(100_000);
    const text = formatAlerts(
      hook(
        [
          alert(1, 'firing', {
            annotations: { summary: big, description: big },
            labels: { alertname: big, k: big },
          }),
        ],
        {
          groupLabels: { alertname: big },
          commonLabels: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`l${i}`, big])),
          externalURL: `http://${big}`,
        },
      ),
    );
    assert.ok(text.length <= 4096, String(text.length));
    parseHtml(text);
  });

  it('says RESOLVED for a resolved group and leaves out links that are not http(s)', () => {
    const text = formatAlerts(
      hook([alert(1, 'resolved', { endsAt: '2026-05-01T11:00:00Z', generatorURL: 'javascript:alert(1)' })], {
        status: 'resolved',
      }),
    );
    assert.match(text, /^✅ <b>RESOLVED<\/b> · <b>HighLoad<\/b>/);
    assert.match(text, /resolved 2026-05-01 11:00 UTC/);
    assert.equal(text.includes('javascript:'), false);
  });
});

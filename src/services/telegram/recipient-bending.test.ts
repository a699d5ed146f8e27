// Issue 33: recipient tokens bent by what Telegram's server reads differently from a gateway. The
// stand-in reads calls as Telegram does (test/fixtures/telegram/bot-api-reader.ts: query before
// body, the first of two equal names and JSON keys, Content-Disposition split on every ';' with
// %XX decoded, a form-typed part expanded into parameters), and after every case below no call
// that reached it may, in its reading, name another chat, quote one or use a business connection.
// Each case is refused (or, where marked, neutralised) by devutil in the Bot API's shape.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { BOT, CHATS, FakeBotApi, type Received } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { assertNoSecrets } from '../../../test/fixtures/telegram/no-secrets.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../../../test/fixtures/telegram/overrides.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../../../test/helpers/server.ts';

const GROUP = CHATS.group!.id;
const USER = CHATS.user!.id;
const enc = encodeURIComponent;

/** A multipart body from raw part heads: [head lines, value]. */
function multipart(parts: [string, string | Buffer][]): { payload: Buffer; headers: Record<string, string> } {
  const b = `----bend${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const [head, value] of parts)
    chunks.push(Buffer.from(`--${b}\r\n${head}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n'));
  chunks.push(Buffer.from(`--${b}--\r\n`));
  return {
    payload: Buffer.concat(chunks),
    headers: { 'content-type': `multipart/form-data; boundary=${b}` },
  };
}
const cd = (rest: string) => `Content-Disposition: form-data; ${rest}`;
const doc: [string, string] = [
  `${cd('name="document"; filename="ci.log"')}\r\nContent-Type: text/plain`,
  'log\n',
];
/** A reply_parameters value quoting USER in Telegram's reading and GROUP in JSON.parse's. */
const BENT_REPLY = `{"message_id":1,"chat_id":${USER},"chat_id":${GROUP}}`;

/** What in a call, as Telegram reads it, reaches outside the token's chat GROUP; null for nothing. */
function outside(r: Received): string | null {
  for (const [k, v] of r.args) {
    if (k === 'business_connection_id') return 'a business connection';
    if (k === 'chat_id' && String(v).trim() !== String(GROUP)) return `chat ${String(v)}`;
  }
  const reply = r.params['reply_parameters'];
  if (reply !== undefined) {
    const quoted =
      typeof reply === 'object' && reply !== null ? (reply as { chat_id?: unknown }).chat_id : undefined;
    if (quoted !== undefined && String(quoted) !== String(GROUP)) return `a quote of chat ${String(quoted)}`;
  }
  return null;
}

describe('recipient tokens bent by what Telegram reads otherwise (issue 33)', { timeout: 120_000 }, () => {
  registerSecret(BOT.token);
  const logs = new LogCapture();
  let fake: FakeBotApi;
  let srv: Running;
  let token = '';

  before(async () => {
    fake = await FakeBotApi.start();
    try {
      srv = await startTestServer({
        logs,
        overrides: {
          ...OTHERS_OFF,
          server: { dataDir: tempDir() },
          egress: { resolve: [fake.resolve] },
          telegram: { ...BUDGETS_OFF, apiBase: fake.apiBase, connectTimeoutMs: 30_000 },
        },
      });
    } catch (err) {
      await fake.close();
      throw err;
    }
    const r = await srv.app.inject({
      method: 'POST',
      url: '/telegram/recipients',
      headers: { authorization: `Bearer ${BOT.token}` },
      payload: { chat_id: GROUP, methods: ['sendMessage', 'sendDocument'] },
    });
    assert.equal(r.statusCode, 201, r.body);
    token = registerSecret(r.json().result.token as string);
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  const at = (method: string, query = '') => `/telegram/bot${token}/${method}${query ? `?${query}` : ''}`;
  const json = (url: string, payload: string): InjectOptions => ({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload,
  });
  const form = (url: string, payload: string): InjectOptions => ({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload,
  });
  const upload = (url: string, parts: [string, string | Buffer][]): InjectOptions => ({
    method: 'POST',
    url,
    ...multipart(parts),
  });

  /** [what, request, status, description]: refused, and nothing reached Telegram. */
  type Case = [string, () => InjectOptions, number, RegExp];
  const refused: Case[] = [
    // Multipart field names that Telegram's reader splits or decodes into another name.
    [
      'a field named `x; name=reply_parameters; y=` (Telegram reads reply_parameters)',
      () => upload(at('sendDocument'), [[cd('name="x; name=reply_parameters; y="'), BENT_REPLY], doc]),
      400,
      /parameter name is 1-64 letters/,
    ],
    [
      'a field named `x; name=business_connection_id; y=`',
      () =>
        upload(at('sendMessage'), [
          [cd('name="x; name=business_connection_id; y="'), 'b1'],
          [cd('name="text"'), 'x'],
        ]),
      400,
      /parameter name is 1-64 letters/,
    ],
    [
      'a field named `reply%5Fparameters` (Telegram decodes %XX in names)',
      () =>
        upload(at('sendMessage'), [
          [cd('name="reply%5Fparameters"'), `{"message_id":1,"chat_id":${USER}}`],
          [cd('name="text"'), 'x'],
        ]),
      400,
      /parameter name/,
    ],
    [
      'a field named `business%5Fconnection%5Fid`',
      () =>
        upload(at('sendMessage'), [
          [cd('name=business%5Fconnection%5Fid'), 'b1'],
          [cd('name="text"'), 'x'],
        ]),
      400,
      /parameter name/,
    ],
    [
      'a field named `caption; filename=x` (Telegram reads a file)',
      () => upload(at('sendDocument'), [[cd('name="caption; filename=x"'), 'c'], doc]),
      400,
      /parameter name/,
    ],
    [
      'a part of type application/octet-stream without a filename (a field to Telegram)',
      () =>
        upload(at('sendMessage'), [
          [`${cd('name="business_connection_id"')}\r\nContent-Type: application/octet-stream`, 'b1'],
          [cd('name="text"'), 'x'],
        ]),
      400,
      /text field; application\/octet-stream is not text\/plain/,
    ],
    [
      'a chat_id part of type application/octet-stream without a filename',
      () =>
        upload(at('sendDocument'), [
          [`${cd('name="chat_id"')}\r\nContent-Type: application/octet-stream`, String(USER)],
          doc,
        ]),
      400,
      /not text\/plain/,
    ],
    [
      'a part of type application/x-www-form-urlencoded (Telegram reads its body as parameters)',
      () =>
        upload(at('sendDocument'), [
          [
            `${cd('name="caption"')}\r\nContent-Type: application/x-www-form-urlencoded`,
            `chat_id=${USER}&business_connection_id=b1`,
          ],
          doc,
        ]),
      400,
      /not text\/plain/,
    ],
    [
      'a reply_parameters part typed application/json with two chat_id',
      () =>
        upload(at('sendDocument'), [
          [`${cd('name="reply_parameters"')}\r\nContent-Type: application/json`, BENT_REPLY],
          doc,
        ]),
      400,
      /./,
    ],
    [
      'two chat_id parts, its own first',
      () =>
        upload(at('sendDocument'), [
          [cd('name="chat_id"'), String(GROUP)],
          [cd('name="chat_id"'), String(USER)],
          doc,
        ]),
      400,
      /chat_id is given twice/,
    ],
    [
      'two caption parts',
      () => upload(at('sendDocument'), [[cd('name="caption"'), 'a'], [cd('name="caption"'), 'b'], doc]),
      400,
      /caption is given twice/,
    ],
    [
      'a file part named like a text parameter',
      () => upload(at('sendDocument'), [[cd('name="reply_parameters"; filename="r.json"'), BENT_REPLY], doc]),
      400,
      /reply_parameters is a text parameter/,
    ],
    // JSON with a duplicate key, where Telegram reads the first and JSON.parse the last.
    [
      'reply_parameters as a JSON string with two chat_id, in a JSON body',
      () => json(at('sendMessage'), JSON.stringify({ text: 'x', reply_parameters: BENT_REPLY })),
      400,
      /reply_parameters: the key "chat_id" is given twice/,
    ],
    [
      'reply_parameters as JSON text with two chat_id, in a form',
      () => form(at('sendMessage'), `text=x&reply_parameters=${enc(BENT_REPLY)}`),
      400,
      /given twice/,
    ],
    [
      'reply_parameters as JSON text with two chat_id, in a multipart field',
      () => upload(at('sendDocument'), [[cd('name="reply_parameters"'), BENT_REPLY], doc]),
      400,
      /given twice/,
    ],
    [
      'reply_parameters as JSON text with two chat_id, in the query of an upload',
      () => upload(at('sendDocument', `reply_parameters=${enc(BENT_REPLY)}`), [doc]),
      400,
      /given twice/,
    ],
    [
      'reply_parameters as JSON text with two chat_id, in the query of a JSON call',
      () => json(at('sendMessage', `reply_parameters=${enc(BENT_REPLY)}`), '{"text":"x"}'),
      400,
      /given twice/,
    ],
    [
      'a JSON body with two chat_id, another chat first',
      () => json(at('sendMessage'), `{"chat_id":${USER},"chat_id":${GROUP},"text":"x"}`),
      400,
      /given twice/,
    ],
    [
      'a JSON body whose reply_parameters object has two chat_id',
      () => json(at('sendMessage'), `{"text":"x","reply_parameters":${BENT_REPLY}}`),
      400,
      /given twice/,
    ],
    [
      'a duplicate key deep in reply_markup',
      () =>
        json(
          at('sendMessage'),
          '{"text":"x","reply_markup":{"inline_keyboard":[[{"text":"a","url":"https://a.example/","url":"https://b.example/"}]]}}',
        ),
      400,
      /given twice/,
    ],
    [
      'reply_parameters as a JSON string with two chat_id, on the message inlet /telegram/r/<token>',
      () => json(`/telegram/r/${token}`, JSON.stringify({ text: 'x', reply_parameters: BENT_REPLY })),
      400,
      /given twice/,
    ],
    [
      'a body with two chat_id on the message inlet',
      () => json(`/telegram/r/${token}`, `{"chat_id":${USER},"chat_id":${GROUP},"text":"x"}`),
      400,
      /given twice/,
    ],
    // The query string: Telegram reads it before the body, and reads its first duplicate.
    [
      'two chat_id in the query, another chat first',
      () => json(at('sendMessage', `chat_id=${USER}&chat_id=${GROUP}`), '{"text":"x"}'),
      403,
      /sends only to chat/,
    ],
    [
      'two chat_id in the query, its own first',
      () => json(at('sendMessage', `chat_id=${GROUP}&chat_id=${USER}`), '{"text":"x"}'),
      400,
      /chat_id is given twice/,
    ],
    [
      'chat_id in the query and in a form body',
      () => form(at('sendMessage', `chat_id=${USER}`), `chat_id=${GROUP}&text=x`),
      403,
      /sends only to chat/,
    ],
    [
      'its own chat_id in the query and another in a JSON body',
      () => json(at('sendMessage', `chat_id=${GROUP}`), `{"chat_id":${USER},"text":"x"}`),
      400,
      /chat_id is given twice/,
    ],
    [
      'chat_id in the query and its own again in the body',
      () => form(at('sendMessage', `chat_id=${GROUP}`), `chat_id=${GROUP}&text=x`),
      400,
      /chat_id is given twice/,
    ],
    [
      'a query with GET and two reply_parameters',
      () => ({
        method: 'GET',
        url: at(
          'sendMessage',
          `text=x&reply_parameters=${enc('{"message_id":1}')}&reply_parameters=${enc(`{"message_id":1,"chat_id":${USER}}`)}`,
        ),
      }),
      400,
      /reply_parameters is given twice/,
    ],
    [
      'text that is not UTF-8 in the query',
      () => ({ method: 'GET', url: at('sendMessage', 'text=%FF%FE') }),
      400,
      /not UTF-8/,
    ],
    // Business connections and other chats, in every encoding.
    [
      'a business connection in the query',
      () => ({ method: 'GET', url: at('sendMessage', 'text=x&business_connection_id=b1') }),
      403,
      /business connection/,
    ],
    [
      'a business connection spelled %5F in a form',
      () => form(at('sendMessage'), 'text=x&business%5Fconnection%5Fid=b1'),
      403,
      /business connection/,
    ],
    [
      'a business connection spelled \\u005f in JSON',
      () => json(at('sendMessage'), '{"text":"x","business\\u005fconnection_id":"b1"}'),
      403,
      /business connection/,
    ],
    [
      'a business connection as an unquoted multipart name after another',
      () =>
        upload(at('sendMessage'), [
          [cd('name=text; name=business_connection_id'), 'b1'],
          [cd('name="text"'), 'x'],
        ]),
      403,
      /business connection/,
    ],
    [
      'a quote of another chat as an unquoted multipart name after another (busboy reads the last)',
      () =>
        upload(at('sendDocument'), [
          [cd('name=caption; name=reply_parameters'), `{"message_id":1,"chat_id":${USER}}`],
          doc,
        ]),
      403,
      /quote only the chat/,
    ],
    [
      'a quote of another chat by @name in a form',
      () =>
        form(
          at('sendMessage'),
          `text=x&reply_parameters=${enc('{"message_id":1,"chat_id":"@devutil_releases"}')}`,
        ),
      403,
      /quote only the chat/,
    ],
    [
      'another chat in the query of a GET',
      () => ({ method: 'GET', url: at('sendMessage', `chat_id=${USER}&text=x`) }),
      403,
      /sends only to chat/,
    ],
  ];

  for (const [what, req, status, description] of refused) {
    it(`refuses ${what} with ${status}; Telegram reads no other chat`, async () => {
      const before = fake.received.length;
      const r = await srv.app.inject(req());
      const reached = fake.received.slice(before);
      for (const call of reached) assert.equal(outside(call), null, `Telegram read ${outside(call)}`);
      assert.equal(r.statusCode, status, r.body);
      assert.equal(r.json().ok, false);
      assert.equal(r.json().error_code, status);
      assert.match(r.json().description, description);
      assert.equal(reached.length, 0, 'nothing reached Telegram');
    });
  }

  /** Neutralised: sent, written anew by devutil, and Telegram reads its own chat only. */
  const neutralised: [string, () => InjectOptions, (r: Received) => void][] = [
    [
      'a file name with `; name=business_connection_id; x=` in it',
      () =>
        upload(at('sendDocument'), [
          [
            `${cd('name="document"; filename="a; name=business_connection_id; x=.log"')}\r\nContent-Type: text/plain`,
            'log',
          ],
        ]),
      (r) => assert.deepEqual(Object.keys(r.files), ['document']),
    ],
    [
      "parameters that are not the method's own (Telegraf's `method` field, paid broadcasts)",
      () =>
        json(
          at('sendMessage'),
          '{"text":"x","method":"forwardMessage","allow_paid_broadcast":true,"from_chat_id":100200300}',
        ),
      (r) =>
        assert.deepEqual(
          r.args.map(([k]) => k),
          ['chat_id', 'text'],
        ),
    ],
    [
      'a quote of its own chat spelled as text',
      () =>
        form(at('sendMessage'), `text=x&reply_parameters=${enc(`{"message_id":1,"chat_id":" ${GROUP}"}`)}`),
      (r) => assert.deepEqual(r.params['reply_parameters'], { message_id: 1, chat_id: GROUP }),
    ],
  ];
  for (const [what, req, check] of neutralised) {
    it(`passes ${what}, written anew: Telegram reads its own chat only`, async () => {
      const before = fake.received.length;
      const r = await srv.app.inject(req());
      assert.equal(r.statusCode, 200, r.body);
      const reached = fake.received.slice(before);
      assert.equal(reached.length, 1);
      assert.equal(outside(reached[0]!), null);
      check(reached[0]!);
    });
  }

  it('never writes the bot key or a recipient token to the logs', () =>
    assertNoSecrets(logs.text(), [token]));
});

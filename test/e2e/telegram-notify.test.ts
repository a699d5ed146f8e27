// Issue 37: ntfy and Gotify publishes as their own docs write them, onto recipient tokens, against a
// stand-in serving https://api.telegram.org that reads calls as Telegram does: curl with ntfy's
// headers, its JSON publish and its GET publish; curl with Gotify's form and JSON; the `ntfy` npm
// client with the Bot API base URL (with its trailing slash: the client resolves the topic as a
// relative URL) and with the root of the Bot API's own host (DEVUTIL_TELEGRAM_HOST). Each publish
// arrives as one message with its title in the token's chat; a revoked token sends nothing. No key
// or token in a log.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { publish } from 'ntfy';
import { makePki } from '../fixtures/proxy/tls.ts';
import { BOT, CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { parseHtml } from '../fixtures/telegram/markup.ts';
import { assertNoSecrets } from '../fixtures/telegram/no-secrets.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../fixtures/telegram/overrides.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const run = promisify(execFile);
const GROUP = CHATS.group!.id;
const USER = CHATS.user!.id;

describe('ntfy and Gotify publishers as their docs say (curl, the ntfy npm client)', {
  skip: toolSkip('openssl', ['version']) || toolSkip('curl'),
  timeout: 240_000,
}, () => {
  registerSecret(BOT.token);
  const logs = new LogCapture();
  const dir = tempDir();
  let fake: FakeBotApi;
  let base: Running;
  let own: Running;
  /** The Bot API base URL on the base host, and the root of the Bot API's own host. */
  let api = '';
  let root = '';
  let token = '';
  let revoked = '';

  before(async () => {
    const pki = makePki(tempDir(), ['api.telegram.org']);
    fake = await FakeBotApi.start({ tls: pki });
    const store = tempDir();
    const overrides = (host: string) => ({
      ...OTHERS_OFF,
      server: { dataDir: store },
      egress: { resolve: [fake.resolve] },
      telegram: { ...BUDGETS_OFF, host, upstreamCa: pki.caFile, connectTimeoutMs: 30_000 },
    });
    try {
      base = await startTestServer({ logs, overrides: overrides('') });
      own = await startTestServer({ logs, overrides: overrides('127.0.0.1') });
    } catch (err) {
      await base?.close();
      await fake.close();
      throw err;
    }
    api = `${base.url}/telegram`;
    root = own.url;
    const register = async (chat: number) => {
      const r = await curl(
        '-H',
        `authorization: Bearer ${BOT.token}`,
        '-H',
        'content-type: application/json',
        '-d',
        JSON.stringify({ chat_id: chat, name: 'ci' }),
        `${api}/recipients`,
      );
      return r.result as { token: string; id: string };
    };
    token = registerSecret((await register(GROUP)).token);
    const gone = await register(USER);
    revoked = registerSecret(gone.token);
    await curl('-X', 'DELETE', '-H', `authorization: Bearer ${BOT.token}`, `${api}/recipients/${gone.id}`);
  });
  after(async () => {
    await own?.close();
    await base?.close();
    await fake?.close();
  });

  const curl = async (...args: string[]) =>
    JSON.parse((await run('curl', ['-sS', '--max-time', '60', ...args])).stdout);
  /** Runs `send` and answers what Telegram shows for the one message it made. */
  const oneMessage = async (send: () => Promise<unknown>) => {
    const n = fake.received.length;
    const answer = await send();
    const got = fake.received.slice(n);
    assert.equal(got.length, 1, `one call reached Telegram: ${JSON.stringify(answer)}`);
    assert.equal(got[0]!.method, 'sendmessage');
    assert.equal(String(got[0]!.params['chat_id']), String(GROUP));
    return { answer, ...parseHtml(String(got[0]!.params['text'])) };
  };

  it("takes ntfy's curl examples: a body with headers, Markdown, a file by PUT, JSON, a GET publish", async () => {
    const file = join(dir, 'note.txt');
    writeFileSync(file, 'disk 91% full on db-1\n');
    const sends: [string[], string][] = [
      [
        [
          '-H',
          'Title: Backup',
          '-H',
          'Priority: urgent',
          '-H',
          'Tags: tada,db',
          '-d',
          'Backup successful 😀',
          `${api}/${token}`,
        ],
        '🎉‼️ Backup\nBackup successful 😀\n\n🏷 db',
      ],
      [
        ['-H', 'Markdown: yes', '-H', 't: Release', '-d', '**v2** is _out_', `${api}/${token}`],
        'Release\nv2 is out',
      ],
      [['-T', file, '-H', 'X-Title: Disk', `${api}/${token}`], 'Disk\ndisk 91% full on db-1'],
      [
        [
          '-d',
          JSON.stringify({ topic: token, title: 'From JSON', message: 'hello', tags: ['warning'] }),
          api,
        ],
        '⚠️ From JSON\nhello',
      ],
      [[`${api}/${token}/publish?title=Via+GET&message=ping`], 'Via GET\nping'],
    ];
    for (const [args, text] of sends) {
      const m = await oneMessage(() => curl(...args));
      assert.equal(m.text, text);
      const a = m.answer as Record<string, unknown>;
      assert.equal(a['event'], 'message');
      assert.equal(a['topic'], token);
    }
  });

  it("takes Gotify's curl examples: a multipart form with ?token=, JSON with X-Gotify-Key and extras", async () => {
    const form = await oneMessage(() =>
      curl(
        `${api}/message?token=${token}`,
        '-F',
        'title=my title',
        '-F',
        'message=my message',
        '-F',
        'priority=5',
      ),
    );
    assert.equal(form.text, 'my title\nmy message');
    assert.equal((form.answer as { title: string }).title, 'my title');
    const extras = { 'client::display': { contentType: 'text/markdown' } };
    const json = await oneMessage(() =>
      curl(
        '-H',
        `X-Gotify-Key: ${token}`,
        '-H',
        'Content-Type: application/json',
        '-d',
        JSON.stringify({ title: 'Markdown', message: '**done**', priority: 10, extras }),
        `${root}/message`,
      ),
    );
    assert.equal(json.text, '‼️ Markdown\ndone');
    assert.deepEqual(
      json.entities.map((e) => e.type),
      ['bold', 'bold'],
    );
    assert.deepEqual((json.answer as { extras: unknown }).extras, extras);
  });

  it('takes the ntfy npm client at the base URL (with its slash) and at the own host root', async () => {
    for (const server of [`${api}/`, root]) {
      const m = await oneMessage(() =>
        publish({
          server,
          topic: token,
          title: 'npm client',
          message: 'from node',
          tags: ['rocket'],
          priority: 4,
        }),
      );
      assert.equal(m.text, '🚀❗ npm client\nfrom node');
      assert.equal((m.answer as { title: string }).title, 'npm client');
    }
  });

  it('sends nothing for a revoked token, whichever protocol asks', async () => {
    const n = fake.received.length;
    await assert.rejects(publish({ server: root, topic: revoked, message: 'x' }), /Unauthorized/);
    const gotify = await curl(`${api}/message?token=${revoked}`, '-F', 'message=x');
    assert.deepEqual(
      [gotify.errorCode, gotify.errorDescription],
      [401, 'unknown or revoked recipient token'],
    );
    const ntfy = await curl('-d', 'x', `${api}/${revoked}`);
    assert.deepEqual([ntfy.code, ntfy.http], [40101, 401]);
    assert.equal(fake.received.length, n);
  });

  it('never writes the bot key or a recipient token to the logs', () =>
    assertNoSecrets(logs.text(), [token, revoked]));
});

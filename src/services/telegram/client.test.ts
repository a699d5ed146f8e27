// BotApiClient against the fake Bot API: results, error shapes, the response cap, key scrubbing, and
// the outbound proxy option through a real CONNECT proxy (with and without credentials).
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type ConnectProxy, startConnectProxy } from '../../../test/fixtures/telegram/connect-proxy.ts';
import { BOT, CHATS, FakeBotApi } from '../../../test/fixtures/telegram/fake-bot-api.ts';
import { registerSecret } from '../../../test/helpers/secrets.ts';
import { BotApiClient, type BotApiOptions } from './client.ts';

describe('Bot API client', () => {
  for (const k of [BOT.token]) registerSecret(k);
  let fake: FakeBotApi;
  let proxy: ConnectProxy;
  let authProxy: ConnectProxy;
  const clients: BotApiClient[] = [];
  const client = (o: Partial<BotApiOptions> = {}) => {
    const c = new BotApiClient({
      apiBase: fake.apiBase,
      resolve: [fake.resolve],
      // Far above what a call takes on a busy machine; the timeout cases set short ones and an
      // upstream that never answers.
      connectTimeoutMs: 30_000,
      timeoutMs: 30_000,
      connections: 4,
      maxResponseBytes: 64 * 1024,
      ...o,
    });
    clients.push(c);
    return c;
  };

  before(async () => {
    fake = await FakeBotApi.start();
    proxy = await startConnectProxy();
    authProxy = await startConnectProxy(`Basic ${Buffer.from('ops:s3cret').toString('base64')}`);
  });
  after(async () => {
    for (const c of clients) await c.close();
    await proxy.close();
    await authProxy.close();
    await fake.close();
  });

  it('returns the result of a successful call and posts JSON to /bot<key>/<method>', async () => {
    const r = await client().call(BOT.token, 'sendMessage', { chat_id: CHATS.user!.id, text: 'hi' });
    assert.equal(r.kind, 'ok');
    assert.equal((r as { result: { text: string } }).result.text, 'hi');
    assert.equal(fake.last()!.httpMethod, 'POST');
    assert.equal(fake.last()!.token, BOT.token);
  });

  it('keeps a path prefix of the configured base URL (self-hosted Bot API servers)', async () => {
    const r = await client({ apiBase: `${fake.apiBase}/prefix` }).call(BOT.token, 'getMe', {});
    // The fake serves /bot... only, so the prefix must have been sent: it answers 404 Not Found.
    assert.equal(r.kind, 'api-error');
    assert.equal((r as { errorCode: number }).errorCode, 404);
  });

  it("returns Telegram's error code, description and retry_after", async () => {
    fake.fault({ kind: 'flood', retryAfter: 12 });
    const r = await client().call(BOT.token, 'sendMessage', { chat_id: 1, text: 'x' });
    assert.deepEqual(r, {
      kind: 'api-error',
      status: 429,
      errorCode: 429,
      description: 'Too Many Requests: retry after 12',
      retryAfter: 12,
    });
  });

  it('scrubs the key from an upstream description that echoes it', async () => {
    fake.fault({
      kind: 'status',
      status: 400,
      body: JSON.stringify({ ok: false, error_code: 400, description: `bad token ${BOT.token} here` }),
    });
    const r = await client().call(BOT.token, 'sendMessage', {});
    assert.equal(r.kind, 'api-error');
    assert.equal((r as { description: string }).description, 'bad token [redacted] here');
  });

  it('refuses an upstream answer larger than the cap as a bad response', async () => {
    fake.fault({ kind: 'status', status: 200, body: JSON.stringify({ ok: true, result: 'x'.repeat(5000) }) });
    const r = await client({ maxResponseBytes: 1024 }).call(BOT.token, 'sendMessage', {});
    assert.equal(r.kind, 'bad-response');
  });

  it('classifies a slow answer as a response timeout and a reset as a network error', async () => {
    fake.fault({ kind: 'delay', ms: 600_000 });
    assert.deepEqual(await client({ timeoutMs: 300 }).call(BOT.token, 'sendMessage', {}), {
      kind: 'timeout',
      phase: 'response',
    });
    fake.fault({ kind: 'close' });
    const r = await client().call(BOT.token, 'sendMessage', {});
    assert.equal(r.kind, 'network');
  });

  it('classifies a TLS handshake that never completes as a connect timeout', async () => {
    // Accepts TCP and stays silent: the https connection can never be established.
    const held: Socket[] = [];
    const silent = createServer((s) => void held.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const r = await client({
        apiBase: 'https://silent.test',
        resolve: [`silent.test=127.0.0.1:${port}`],
        connectTimeoutMs: 300,
      }).call(BOT.token, 'sendMessage', {});
      assert.deepEqual(r, { kind: 'timeout', phase: 'connect' });
    } finally {
      for (const s of held) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  // The fake listens on a loopback literal: the address guard lets it through the proxy only when allowed.
  const via = (proxyUrl: string) => ({ proxy: proxyUrl, noProxy: [], allowCidrs: ['127.0.0.1'] });

  it('goes through the configured outbound proxy (CONNECT tunnel), which never sees the key', async () => {
    const r = await client({ apiBase: fake.url, policy: via(proxy.url) }).call(BOT.token, 'sendMessage', {
      chat_id: CHATS.user!.id,
      text: 'via proxy',
    });
    assert.equal(r.kind, 'ok');
    assert.deepEqual(proxy.tunnels, [new URL(fake.url).host]);
    assert.equal(fake.last()!.params['text'], 'via proxy');
  });

  it('sends proxy credentials from the proxy URL, and reports a refusing proxy as a network error', async () => {
    const u = new URL(authProxy.url);
    u.username = 'ops';
    u.password = 's3cret';
    const ok = await client({ apiBase: fake.url, policy: via(u.toString()) }).call(BOT.token, 'getMe', {});
    assert.equal(ok.kind, 'ok');
    const denied = await client({ apiBase: fake.url, policy: via(authProxy.url) }).call(
      BOT.token,
      'getMe',
      {},
    );
    assert.equal(denied.kind, 'network');
    assert.equal(JSON.stringify(denied).includes(BOT.token.split(':')[1]!), false);
  });
});

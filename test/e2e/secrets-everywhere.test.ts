// Every secret devutil knows, set at once on one real server, each used by the requests it is for:
// the private mirror's secret (the host-path form, npm, Go, Hugging Face, docker login), the admin
// token and a single sign-on (its client secret), the metrics token, a bot key (the message relay
// and the Bot API base URL, through an outbound proxy with a password), a recipient token, the
// avatar uploads token, S3 keys (a file stored and read), Redis's password, the relay token, the
// Docker Hub token and the trace collector's key. None of them then appears in /openapi.json,
// /docs/json, /metrics, /, /setup.sh, /readyz, the admin stats, any other answer (save the links a
// private mirror hands back to whoever sent its secret, and the recipient token to its owner), an
// exported trace, or any log line.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startS3 } from '../fixtures/files/s3.ts';
import { startProvider, type TestProvider } from '../fixtures/oidc/provider.ts';
import { signInAtProvider } from '../fixtures/oidc/sign-in.ts';
import { GO_MODULE_ESCAPED, installGo } from '../fixtures/proxy/goproxy.ts';
import { HF_REPO, installHub } from '../fixtures/proxy/hf.ts';
import { installNpm } from '../fixtures/proxy/npm.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { type ConnectProxy, startConnectProxy } from '../fixtures/telegram/connect-proxy.ts';
import { CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF } from '../fixtures/telegram/overrides.ts';
import { CookieClient } from '../helpers/cookie-client.ts';
import { OtlpReceiver } from '../helpers/otlp.ts';
import { freePort } from '../helpers/ports.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { LogCapture } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const hex = (n: number) => randomBytes(n).toString('hex');
const b64 = (s: string) => Buffer.from(s).toString('base64');
const BOT_ID = 7000000000 + Math.floor(Math.random() * 1e8);

// Each a fresh random value; `S` names them for the messages.
const S = {
  proxy: `prx-${hex(12)}`,
  admin: `adm-${hex(12)}`,
  metrics: `met-${hex(12)}`,
  oidc: `oidc-${hex(12)}`,
  bot: `${BOT_ID}:AA${randomBytes(26).toString('base64url').slice(0, 33)}`,
  tgProxy: `tgp${hex(10)}`,
  avatar: `ava-${hex(12)}`,
  s3: `s3s-${hex(16)}`,
  redis: `rds${hex(12)}`,
  relay: `rly-${hex(12)}`,
  dockerhub: `dckr_pat_${hex(12)}`,
  collector: `otl-${hex(12)}`,
};
/** The forms a secret also travels in: Basic credentials. */
const DERIVED = {
  'proxy (docker login)': b64(`any:${S.proxy}`),
  'oidc (client_secret_basic)': b64(`devutil-admin:${S.oidc}`),
  'tgProxy (Proxy-Authorization)': b64(`ops:${S.tgProxy}`),
};
const secrets = new Map<string, string>([
  ...Object.entries(S),
  ...Object.entries(DERIVED),
  ['redis url', ''],
]);
for (const v of [...Object.values(S), ...Object.values(DERIVED)]) registerSecret(v);

interface Seen {
  what: string;
  status: number;
  text: string;
  /** Secrets this answer may carry: the mirror's links for whoever sent its secret. */
  mayCarry: string[];
}

describe('every secret configured, none in a public answer, a trace or a log', {
  skip: toolSkip('redis-server'),
  timeout: 300_000,
}, () => {
  const logs = new LogCapture();
  const seen: Seen[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  let base = '';
  let w: World;
  let fake: FakeBotApi;
  let tgProxy: ConnectProxy;
  let otlp: OtlpReceiver;
  let idp: TestProvider;
  let redis: RedisHandle;

  before(async () => {
    try {
      redis = await startRedis({ password: S.redis });
      closers.push(() => redis.stop());
      secrets.set('redis url', redis.url);
      registerSecret(redis.url);
      const s3 = await startS3('devutil-secrets', [], {
        accessKeyId: `AKIA${hex(8)}`,
        secretAccessKey: S.s3,
      });
      closers.push(() => s3.close());
      fake = await FakeBotApi.start();
      closers.push(() => fake.close());
      fake.bots.set(S.bot, { token: S.bot, id: BOT_ID, username: 'secret_scan_bot', first_name: 'scan' });
      tgProxy = await startConnectProxy(`Basic ${DERIVED['tgProxy (Proxy-Authorization)']}`);
      closers.push(() => tgProxy.close());
      otlp = await OtlpReceiver.start();
      closers.push(() => otlp.close());
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      idp = await startProvider({
        clientId: 'devutil-admin',
        clientSecret: S.oidc,
        redirectUris: [`${base}/admin/oidc/callback`],
        accounts: [{ id: 'alice', email: 'alice@example.com', groups: [] }],
      });
      closers.push(() => idp.close());
      w = await startWorld({
        git: false,
        logs,
        overrides: {
          server: { port },
          redis: { url: redis.url },
          storage: s3.overrides,
          // The one outbound proxy (formerly telegram.proxyUrl), with a password. Upstreams overridden to
          // loopback (the stand-ins) go direct; the Bot API stand-in, a loopback literal the guard lets through only
          // when allowed, goes through it.
          egress: {
            resolve: [idp.resolve],
            proxy: `http://ops:${S.tgProxy}@${new URL(tgProxy.url).host}`,
            allowCidrs: ['127.0.0.1'],
          },
          admin: {
            token: S.admin,
            rateLimit: '1000/min',
            oidcIssuer: idp.issuer,
            oidcClientId: 'devutil-admin',
            oidcClientSecret: S.oidc,
            oidcAllowedUsers: ['alice@example.com'],
          },
          metrics: { token: S.metrics },
          proxy: {
            secret: S.proxy,
            ecosystems: ['npm', 'go', 'hf', 'oci'],
            ociDockerhubUser: 'operator',
            ociDockerhubToken: S.dockerhub,
          },
          telegram: {
            ...BUDGETS_OFF,
            apiBase: fake.url,
          },
          avatar: { adminToken: S.avatar },
          relay: { token: S.relay },
          tracing: {
            endpoint: otlp.url,
            protocol: 'http/json',
            headers: `x-collector-key=${S.collector}`,
            scheduleDelayMs: 200,
          },
        },
      });
      closers.push(() => w.close());
      installNpm(w.net);
      installGo(w.net);
      installHub(w.net);
    } catch (err) {
      for (const c of closers.reverse()) await c().catch(() => {});
      throw err;
    }
  });
  after(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
  });

  /** A request whose answer (status line, headers, body) is kept for the scan. */
  async function call(
    what: string,
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | FormData } = {},
    mayCarry: string[] = [],
  ): Promise<{ status: number; body: string; headers: Headers }> {
    const r = await fetch(`${base}${path}`, { ...init, redirect: 'manual' });
    const body = await r.text();
    const head: string[] = [];
    r.headers.forEach((v, k) => {
      head.push(`${k}: ${v}`);
    });
    const text = `${r.status}\n${head.join('\n')}\n\n${body}`;
    seen.push({ what, status: r.status, text, mayCarry });
    return { status: r.status, body, headers: r.headers };
  }
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const mirror = `/proxy/t/${S.proxy}`;

  it('uses the private mirror secret: host-path form, npm, Go, Hugging Face and docker login', async () => {
    const mine = [S.proxy];
    const asset = await call(
      'release asset',
      `${mirror}/github.com/o/r/releases/download/v1/asset.bin`,
      {},
      mine,
    );
    assert.equal(asset.status, 200);
    assert.equal((await call('npm packument', `${mirror}/npm/devutil-unscoped`, {}, mine)).status, 200);
    assert.equal((await call('go list', `${mirror}/go/${GO_MODULE_ESCAPED}/@v/list`, {}, mine)).status, 200);
    assert.equal((await call('hf model', `${mirror}/hf/api/models/${HF_REPO}`, {}, mine)).status, 200);
    const lfs = await call('hf lfs file', `${mirror}/hf/${HF_REPO}/resolve/main/model.bin`, {}, mine);
    assert.equal(lfs.status, 200);
    for (const [what, path] of [
      ['a wrong secret', `/proxy/t/${S.proxy.slice(0, -1)}x/npm/devutil-unscoped`],
      ['the secret with a suffix', `/proxy/t/${S.proxy}x/github.com/o/r/releases/download/v1/asset.bin`],
      ['no secret', '/proxy/npm/devutil-unscoped'],
    ] as const)
      assert.equal((await call(what, path)).status, 403, what);
    assert.equal((await call('registry ping', '/v2/')).status, 401);
    const token = await call('docker login', '/v2/token?service=devutil&scope=repository:x:pull', {
      headers: { authorization: `Basic ${DERIVED['proxy (docker login)']}` },
    });
    assert.equal(token.status, 200);
    const t = (JSON.parse(token.body) as { token: string }).token;
    // Handed to whoever logged in (this answer), and never shown anywhere else.
    seen.at(-1)?.mayCarry.push(t);
    secrets.set('an issued registry token', t);
    assert.equal((await call('registry with token', '/v2/', { headers: bearer(t) })).status, 200);
    const wrong = await call('docker login, wrong password', '/v2/token?service=devutil', {
      headers: { authorization: `Basic ${b64(`any:${S.proxy}x`)}` },
    });
    assert.equal(wrong.status, 401);
  });

  it('uses the admin token, an SSO sign-in (the client secret) and the metrics token', async () => {
    assert.equal(
      (await call('admin stats', '/rest/api/v1/admin/stats', { headers: bearer(S.admin) })).status,
      200,
    );
    assert.equal(
      (await call('admin, wrong token', '/rest/api/v1/admin/stats', { headers: bearer(`${S.admin}x`) }))
        .status,
      401,
    );
    const c = new CookieClient({ [idp.host]: `127.0.0.1:${idp.port}` });
    const back = await c.send('GET', (await signInAtProvider(c, `${base}/admin`, 'alice', base)).href);
    assert.equal(back.status, 303, back.body);
    for (const path of ['/admin', '/rest/api/v1/admin/stats']) {
      const r = await c.send('GET', `${base}${path}`);
      assert.equal(r.status, 200, path);
      seen.push({
        what: `${path} with a session`,
        status: r.status,
        text: `${JSON.stringify(r.headers)}\n${r.body}`,
        mayCarry: [],
      });
    }
    assert.equal((await call('metrics', '/metrics', { headers: bearer(S.metrics) })).status, 200);
    assert.equal((await call('metrics, no token', '/metrics')).status, 401);
  });

  it('uses a bot key (message relay, Bot API base URL) through the outbound proxy, and a recipient token', async () => {
    const user = CHATS['user']!.id;
    const sent = await call('message relay', '/rest/api/v1/telegram', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey: S.bot, chatId: user, msgText: 'secret scan' }),
    });
    assert.equal(sent.status, 200, sent.body);
    assert.equal(fake.last()?.token, S.bot);
    assert.ok(tgProxy.tunnels.length > 0, 'through the outbound proxy, its password given');
    assert.equal(
      (await call('bot api getMe', `/telegram/bot${S.bot}/getMe`, { method: 'POST' })).status,
      200,
    );
    const bad = await call('bot api, unknown chat', `/telegram/bot${S.bot}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: 1, text: 'x' }),
    });
    assert.equal(bad.status, 400);
    const reg = await fetch(`${base}/telegram/recipients`, {
      method: 'POST',
      headers: { ...bearer(S.bot), 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: user, name: 'scan' }),
    });
    const doc = (await reg.json()) as { ok: boolean; result: { token: string } };
    // (Never quoted in a message: the answer carries the new token.)
    assert.equal(reg.status, 201);
    assert.equal(doc.ok, true);
    const token = doc.result.token;
    secrets.set('recipient', registerSecret(token));
    const r = await call('recipient send', `/telegram/r/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'via a recipient token',
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(
      (await call('recipient list', '/telegram/recipients', { headers: bearer(S.bot) })).status,
      200,
    );
    // The last character changed (to one it is not: a token ending in A would otherwise be itself).
    const forgedToken = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const forged = await call('recipient, wrong token', `/telegram/r/${forgedToken}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    assert.equal(forged.status, 401);
  });

  it('uses the avatar uploads token and the S3 keys (a file stored and read back)', async () => {
    const md5 = createHash('md5').update('someone@example.com').digest('hex');
    const del = await call('avatar delete', `/avatar/${md5}`, {
      method: 'DELETE',
      headers: bearer(S.avatar),
    });
    assert.ok(del.status === 200 || del.status === 404, `${del.status} ${del.body}`);
    const form = new FormData();
    form.append('file', new Blob(['stored on S3']), 'scan.txt');
    assert.equal(
      (await call('file upload', '/api/file/secret-scan', { method: 'POST', body: form })).status,
      200,
    );
    const got = await call('file download', '/api/file/secret-scan');
    assert.equal(got.status, 200);
    assert.equal(got.body, 'stored on S3');
  });

  it('shows none of them in the public documents, pages, metrics, readiness and admin answers', async () => {
    for (const [what, path, headers] of [
      ['/openapi.json', '/openapi.json', {}],
      ['/docs/json', '/docs/json', {}],
      ['/docs', '/docs/', {}],
      ['/', '/', {}],
      ['/setup.sh', '/setup.sh', {}],
      ['/proxy/setup.sh', '/proxy/setup.sh', {}],
      ['/readyz', '/readyz', {}],
      ['/healthz', '/healthz', {}],
      ['/proxy/', '/proxy/', {}],
      // 503 here: the relay's listener is not started by the test server; its status answers anyway.
      ['/rest/api/v1/relay', '/rest/api/v1/relay', {}],
      ['/admin (no session)', '/admin', {}],
      ['/metrics', '/metrics', bearer(S.metrics)],
      ['admin stats', '/rest/api/v1/admin/stats', bearer(S.admin)],
    ] as const) {
      const r = await call(what, path, { headers });
      assert.ok(
        r.status < 500 || (path === '/rest/api/v1/relay' && r.status === 503),
        `${what}: ${r.status}`,
      );
    }
    const metrics = seen.findLast((s) => s.what === '/metrics')!.text;
    assert.match(metrics, /route="\/proxy\/t\/:secret\/npm\/\*"/, 'the mirror is labelled by its template');
    assert.match(seen.findLast((s) => s.what === '/readyz')!.text, /redis/i, 'readiness checks Redis');
    for (const s of seen)
      for (const [name, value] of secrets)
        if (value && !s.mayCarry.includes(value))
          assert.ok(!s.text.includes(value), `${s.what} (${s.status}) carries the ${name} secret`);
  });

  it('exports traces naming routes by their templates, without a secret', async () => {
    await otlp.waitFor('a span of the npm mount', (spans) =>
      spans.find((s) => s.attributes['http.route'] === '/proxy/t/:secret/npm/*'),
    );
    // The requests of the test before this one are exported too (/setup.sh was one of them).
    await otlp.waitFor('a span of /setup.sh', (spans) =>
      spans.find((s) => s.attributes['http.route'] === '/setup.sh'),
    );
    const exported = otlp.requests.map((r) => r.body.toString('utf8')).join('\n');
    for (const [name, value] of secrets)
      if (value) assert.ok(!exported.includes(value), `an exported trace carries the ${name} secret`);
    assert.ok(
      otlp.requests.some((r) => r.headers['x-collector-key'] === S.collector),
      'the key went to the collector',
    );
  });

  it('writes none of them to a log line', () => {
    assert.ok(logs.lines.length > 50, `${logs.lines.length} lines`);
    for (const line of logs.lines)
      for (const [name, value] of secrets)
        if (value) assert.ok(!line.includes(value), `the ${name} secret in: ${line.slice(0, 300)}`);
  });
});

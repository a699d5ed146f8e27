// Every outbound client goes through the egress client's address guard: the image upstream, the
// avatar mirror, PlantUML's /proxy?src= fetch and URL includes, the Telegram Bot API client and
// the reverse proxy each refuse a loopback or private target that is not in the host overrides, while the same
// fixture server is reached through an override (so the refusal is the guard, not a dead port). With
// the address allowed (DEVUTIL_EGRESS_ALLOW_CIDRS) each reaches it through the outbound proxy
// (DEVUTIL_EGRESS_PROXY, a real tinyproxy): every utility takes both settings from the one client.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { FakeGravatar } from '../fixtures/avatar/gravatar.ts';
import { type PicsumFixture, startPicsumFixture } from '../fixtures/image/picsum.ts';
import { type IncludeServer, startIncludeServer } from '../fixtures/plantuml/include-server.ts';
import { BOT, CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF, OTHERS_OFF } from '../fixtures/telegram/overrides.ts';
import { type ForwardProxy, startTinyproxy } from '../helpers/forward-proxy.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { buildTestServer, LogCapture, type Overrides } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ALL_OFF = { ...OTHERS_OFF, telegram: { enabled: false } } as const;
/** An override onto a private address that is not loopback: refused before any connect. */
const PRIVATE = 'inside.test=10.0.0.1:80';
const MD5 = '0123456789abcdef0123456789abcdef';
const noTinyproxy = toolSkip('tinyproxy', ['-v']);

interface Client {
  name: string;
  /** Overrides that point the client at `target` (an origin like http://host:port). */
  config(target: string, resolve: string[]): Overrides;
  /** Makes the client reach out to `target`: whether it was served from there, and the answer's body. */
  probe(app: FastifyInstance, target: string): Promise<{ ok: boolean; body: string }>;
  /** Requests the fixture has seen so far. */
  hits(): number;
  /** host:port of the fixture (loopback). */
  where(): string;
  /** Target forms this client can be configured with (some configs accept no IP literal or bare name). */
  forms: ('literal' | 'localhost')[];
  /** Its config ignores the target and names every target and override of this file, so the cases
   * with the same egress settings share one server (for a client whose every probe starts a JVM). */
  oneServer?: boolean;
}

describe('the address guard covers every outbound client', () => {
  registerSecret(BOT.token);
  registerSecret('guard-proxy-pw');
  let picsum: PicsumFixture;
  const gravatar = new FakeGravatar();
  let inc: IncludeServer;
  let bot: FakeBotApi;
  let tiny: ForwardProxy | undefined;
  before(async () => {
    picsum = await startPicsumFixture();
    await gravatar.start();
    gravatar.avatars.set(MD5, { colour: [200, 10, 10] });
    inc = await startIncludeServer();
    bot = await FakeBotApi.start();
    if (!noTinyproxy) tiny = await startTinyproxy({ auth: { user: 'ops', password: 'guard-proxy-pw' } });
  });
  /** The servers of `oneServer` clients, by client and egress settings. */
  const shared = new Map<string, { logs: LogCapture; app: Promise<FastifyInstance> }>();
  after(async () => {
    await Promise.allSettled([...shared.values()].map(async (s) => (await s.app).close()));
    await picsum.close();
    await gravatar.stop();
    await inc.close();
    await bot.close();
    await tiny?.close();
  });

  const clients: Client[] = [
    {
      name: 'image upstream',
      config: (target, resolve) => ({
        ...ALL_OFF,
        egress: { resolve },
        image: {
          enabled: true,
          sources: ['upstream'],
          upstreamUrl: `${target}/seed/{id}/{width}/{height}`,
          upstreamTimeoutMs: 3000,
          rateLimit: 'off',
        },
      }),
      probe: async (app) => {
        const r = await app.inject({ url: `/rest/api/v1/image?id=g${Math.random()}&width=20&height=20` });
        return { ok: r.statusCode === 200 && r.headers['image-source'] === 'upstream', body: r.body };
      },
      hits: () => picsum.seen.length,
      where: () => `127.0.0.1:${picsum.port}`,
      forms: ['literal', 'localhost'],
    },
    {
      name: 'avatar mirror',
      config: (target, resolve) => ({
        ...ALL_OFF,
        egress: { resolve },
        avatar: { enabled: true, upstream: target, upstreamTimeoutMs: 3000 },
      }),
      probe: async (app) => {
        const r = await app.inject({ url: `/avatar/${MD5}?s=32&d=404` });
        return { ok: r.statusCode === 200 && r.headers['x-avatar-source'] === 'mirror', body: r.body };
      },
      hits: () => gravatar.seen.length,
      where: () => `127.0.0.1:${gravatar.port}`,
      forms: ['literal', 'localhost'],
    },
    {
      name: 'PlantUML /proxy?src=',
      config: (target, resolve) => ({
        ...ALL_OFF,
        egress: { resolve },
        diagrams: { enabled: true, workers: 1, proxyHosts: [new URL(target).hostname] },
      }),
      probe: async (app, target) => {
        const src = encodeURIComponent(`${target}/remote.puml`);
        const r = await app.inject({ url: `/plantuml/proxy?fmt=txt&src=${src}` });
        return { ok: r.statusCode === 200 && /Carol/.test(r.body), body: r.body };
      },
      hits: () => [...inc.hits.values()].reduce((a, b) => a + b, 0),
      where: () => new URL(inc.url).host,
      // proxyHosts must be dotted host names: `localhost` cannot be configured.
      forms: ['literal'],
    },
    {
      // The engine asks the server for URL includes, so an allow-listed prefix pointing inward is
      // still refused (with the engine's own "cannot open URL" error image).
      name: 'PlantUML !include',
      // Every target of the cases below is allow-listed, and the overrides are those of the control
      // and the private-name case: each refusal is still of a target no override maps to a public
      // address, and the control still reaches the fixture only through its override.
      config: () => {
        const port = new URL(inc.url).port;
        const targets = [
          'http://fixture.test',
          `http://127.0.0.1:${port}`,
          `http://localhost:${port}`,
          'http://inside.test',
        ];
        return {
          ...ALL_OFF,
          egress: { resolve: [`fixture.test=${new URL(inc.url).host}`, PRIVATE] },
          diagrams: { enabled: true, workers: 1, urlAllowlist: targets.map((t) => `${t}/`) },
        };
      },
      oneServer: true,
      probe: async (app, target) => {
        const r = await app.inject({
          method: 'POST',
          url: '/plantuml/txt',
          payload: `@startuml\n!include ${target}/remote.puml\n@enduml`,
          headers: { 'content-type': 'text/plain' },
        });
        return { ok: r.statusCode === 200 && /Carol/.test(r.body), body: r.body };
      },
      hits: () => [...inc.hits.values()].reduce((a, b) => a + b, 0),
      where: () => new URL(inc.url).host,
      forms: ['literal', 'localhost'],
    },
    {
      name: 'Telegram Bot API',
      config: (target, resolve) => ({
        ...OTHERS_OFF,
        egress: { resolve },
        telegram: { ...BUDGETS_OFF, apiBase: target, timeoutMs: 3000 },
      }),
      probe: async (app) => {
        const r = await app.inject({
          method: 'POST',
          url: '/rest/api/v1/telegram',
          payload: { apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'guarded' },
        });
        return { ok: r.statusCode === 200, body: r.body };
      },
      hits: () => bot.received.length,
      where: () => new URL(bot.url).host,
      forms: ['literal', 'localhost'],
    },
  ];

  async function served(
    c: Client,
    target: string,
    resolve: string[],
    egress: Overrides['egress'] = {},
  ): Promise<boolean> {
    const key = c.oneServer ? `${c.name} ${JSON.stringify(egress)}` : undefined;
    let built = key ? shared.get(key) : undefined;
    if (!built) {
      const logs = new LogCapture();
      const overrides = c.config(target, resolve);
      overrides.egress = { ...overrides.egress, ...egress };
      built = { logs, app: buildTestServer({ logs, overrides }) };
      if (key) shared.set(key, built);
    }
    const { logs } = built;
    const app = await built.app;
    const from = logs.lines.length;
    try {
      const r = await c.probe(app, target);
      // A refusal must be the guard's: its reason reaches the answer or this probe's log lines,
      // whatever the client.
      if (!r.ok) assert.match(`${r.body}\n${logs.lines.slice(from).join('\n')}`, /non-public/);
      return r.ok;
    } finally {
      if (!key) await app.close();
    }
  }

  for (const c of clients) {
    const port = () => c.where().split(':')[1];
    it(`${c.name}: reaches the fixture through an override (the control)`, async () => {
      const before = c.hits();
      assert.equal(await served(c, 'http://fixture.test', [`fixture.test=${c.where()}`]), true);
      assert.ok(c.hits() > before);
    });
    if (c.forms.includes('literal'))
      it(`${c.name}: refuses the loopback literal 127.0.0.1 that is not in the overrides`, async () => {
        const before = c.hits();
        assert.equal(await served(c, `http://127.0.0.1:${port()}`, [`fixture.test=${c.where()}`]), false);
        assert.equal(c.hits(), before, 'no request reached the fixture');
      });
    if (c.forms.includes('literal'))
      it(`${c.name}: with 127.0.0.1 allowed, reaches it through the outbound proxy`, {
        skip: noTinyproxy,
      }, async () => {
        const proxy = tiny as ForwardProxy;
        const tunnels = () => proxy.connects().filter((t) => t === c.where()).length;
        const before = { hits: c.hits(), tunnels: tunnels() };
        const egress = { proxy: proxy.url, allowCidrs: ['127.0.0.1'] };
        assert.equal(await served(c, `http://127.0.0.1:${port()}`, [], egress), true);
        assert.ok(c.hits() > before.hits);
        assert.ok(
          tunnels() > before.tunnels,
          `a CONNECT to ${c.where()} in the proxy's log:\n${proxy.log()}`,
        );
      });
    if (c.forms.includes('localhost'))
      it(`${c.name}: refuses localhost, a name that resolves to loopback`, async () => {
        const before = c.hits();
        assert.equal(await served(c, `http://localhost:${port()}`, []), false);
        assert.equal(c.hits(), before, 'no request reached the fixture');
      });
    it(`${c.name}: refuses a name overridden to a private address`, async () => {
      assert.equal(await served(c, 'http://inside.test', [PRIVATE]), false);
    });
  }

  it('Telegram: a refused address answers 403 in both envelopes, naming host, address and setting', async () => {
    const logs = new LogCapture();
    const app = await buildTestServer({
      logs,
      overrides: {
        ...OTHERS_OFF,
        egress: { resolve: [PRIVATE] },
        telegram: { ...BUDGETS_OFF, apiBase: 'http://inside.test', timeoutMs: 3000 },
      },
    });
    try {
      const why =
        'inside.test is overridden to 10.0.0.1, a non-public address; DEVUTIL_EGRESS_ALLOW_CIDRS can allow its range';
      const legacy = await app.inject({
        method: 'POST',
        url: '/rest/api/v1/telegram',
        payload: { apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'guarded' },
      });
      // 403, not a 502 that senders retry: a refusal by policy, with what would allow it.
      assert.equal(legacy.statusCode, 403, legacy.body);
      assert.equal(legacy.json().status, 0);
      assert.equal(legacy.json().msg, `telegram's address is not allowed: ${why}`);
      const bot = await app.inject({
        method: 'POST',
        url: `/telegram/bot${BOT.token}/sendMessage`,
        payload: { chat_id: CHATS.user!.id, text: 'guarded' },
      });
      assert.equal(bot.statusCode, 403, bot.body);
      assert.equal(bot.json().ok, false);
      assert.equal(bot.json().error_code, 403);
      assert.equal(bot.json().description, `Forbidden: telegram's address is not allowed: ${why}`);
      assert.match(logs.text(), /telegram address not allowed/);
    } finally {
      await app.close();
    }
  });

  it('reverse proxy: refuses an allow-listed name overridden to a private address with 403, naming both and the setting', async () => {
    const app = await buildTestServer({
      overrides: {
        ...ALL_OFF,
        egress: { resolve: [PRIVATE] },
        proxy: { enabled: true, allow: ['inside.test'] },
      },
    });
    try {
      const r = await app.inject({ url: '/proxy/inside.test/file' });
      // 403, not a 502 that clients retry: a refusal by policy, with what would allow it.
      assert.equal(r.statusCode, 403);
      assert.equal(
        r.body,
        'upstream address is not allowed: inside.test is overridden to 10.0.0.1, a non-public address; DEVUTIL_EGRESS_ALLOW_CIDRS can allow its range\n',
      );
    } finally {
      await app.close();
    }
  });
});

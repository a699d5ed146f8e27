// A lazily loaded route implementation: nothing is imported until its route is asked, requests that
// arrive together share one load, a failed load answers 503 in the route's envelope (no crash) and
// the next request loads again; and a server start leaves unloaded until asked the tus handlers, the
// Telegram relay, the Kroki renderer, the image handlers, the avatar handlers and service,
// plantuml-server's handlers and Kroki's error answers, the proxy's forwarding, and the schema compilers (Ajv,
// fast-json-stringify's) until a route's schema is first used; an admin dashboard that is off is
// never loaded.
import assert from 'node:assert/strict';
import module from 'node:module';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { EnvelopeTable, installErrorHandling } from './errors.ts';
import { lazyImpl } from './lazy.ts';

// Every module URL loaded from here on (synchronous hooks: Node 22.15+, 24, 26).
const loads = new Set<string>();
const loadCounts = new Map<string, number>();
const hooks = (module as { registerHooks?: (h: object) => unknown }).registerHooks;
hooks?.({
  load(url: string, ctx: unknown, next: (u: string, c: unknown) => unknown) {
    loads.add(url);
    loadCounts.set(url, (loadCounts.get(url) ?? 0) + 1);
    return next(url, ctx);
  },
});
const { buildTestServer } = await import('../../../test/helpers/server.ts');
/** The modules loaded so far whose URL matches `re`. */
const loaded = (re: RegExp) => [...loads].filter((u) => re.test(u));

// First in the file: a plain Fastify instance (the suite below builds one) loads Fastify's default
// compilers, Ajv among them, as it is made.
describe('schema compilers loaded on first use', { timeout: 60_000 }, () => {
  it("starts a server without Ajv or fast-json-stringify's compiler; the first validated requests load them once", {
    skip: !hooks,
  }, async () => {
    const compilers = /\/node_modules\/(ajv|@fastify\/ajv-compiler|@fastify\/fast-json-stringify-compiler)\//;
    const server = await buildTestServer();
    try {
      await server.ready();
      const health = await server.inject('/healthz');
      assert.equal(health.statusCode, 200, health.body);
      assert.deepEqual(
        loaded(compilers),
        [],
        'a server start (or a request without a schema) loaded the compilers',
      );
      // Requests that arrive together, each the first of its route: all validated, all shaped.
      const [bad, badAgain, v1, legacy] = await Promise.all([
        server.inject('/rest/api/v1/ip/port/80?format=xml'),
        server.inject('/rest/api/v1/ip/port/80?format=xml'),
        server.inject('/rest/api/v1/ip'),
        server.inject('/api/ip'),
      ]);
      for (const r of [bad, badAgain]) {
        assert.equal(r?.statusCode, 400, r?.body);
        assert.match(r?.body ?? '', /format/);
      }
      assert.equal(v1?.statusCode, 200, v1?.body);
      assert.equal(v1?.json().data.ip, '127.0.0.1', v1?.body);
      assert.equal(legacy?.statusCode, 200, legacy?.body);
      const after = loaded(compilers);
      assert.ok(
        after.some((u) => /\/ajv-compiler\/index\.js$/.test(u)),
        'the first validated request did not load Ajv',
      );
      assert.deepEqual(
        after.filter((u) => loadCounts.get(u) !== 1),
        [],
        'requests that arrived together loaded a compiler module more than once',
      );
    } finally {
      await server.close();
    }
  });
});

describe('lazy route implementations', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  let loadsRun = 0;
  let failing = 0;
  let flakyLoads = 0;
  let release: () => void = () => {};
  let gate = Promise.resolve();
  const impl = lazyImpl('the probe', async () => {
    loadsRun++;
    await gate;
    return { answer: (req: FastifyRequest) => ({ ok: true, url: req.url }) };
  });
  const flaky = lazyImpl('the flaky probe', async () => {
    flakyLoads++;
    if (failing > 0) {
      failing--;
      throw new Error('Cannot find module /secret/path/probe.ts');
    }
    return { answer: () => ({ ok: true }) };
  });

  before(async () => {
    app = Fastify({ logger: false });
    app.decorate('envelopes', new EnvelopeTable());
    installErrorHandling(app);
    // The files utility's JSON envelope answers their errors.
    app.get(
      '/api/file-lazy-probe',
      impl.handler((i) => async (req: FastifyRequest, _reply: FastifyReply) => i.answer(req)),
    );
    app.get(
      '/api/file-lazy-flaky',
      flaky.handler((i) => async () => i.answer()),
    );
    app.envelopes.mount('/api/file-lazy-probe', 'file');
    app.envelopes.mount('/api/file-lazy-flaky', 'file');
    await app.ready();
  });
  after(async () => {
    await app?.close();
  });

  it('loads on the first request, once for requests that arrive together', async () => {
    gate = new Promise((r) => {
      release = r;
    });
    assert.equal(impl.loaded, false, 'loaded before any request');
    assert.equal(loadsRun, 0);
    const asked = Array.from({ length: 5 }, () => app.inject('/api/file-lazy-probe'));
    // Every request is waiting on the one load.
    while (loadsRun === 0) await new Promise((r) => setImmediate(r));
    release();
    const answers = await Promise.all(asked);
    for (const a of answers) assert.equal(a.statusCode, 200, a.body);
    assert.equal(loadsRun, 1, 'five concurrent first requests loaded more than once');
    assert.equal(impl.loaded, true);
    await app.inject('/api/file-lazy-probe');
    assert.equal(loadsRun, 1, 'a later request loaded again');
  });

  it('answers a failed load with 503 in the envelope and loads again on the next request', async () => {
    failing = 1;
    const r = await app.inject('/api/file-lazy-flaky');
    assert.equal(r.statusCode, 503, r.body);
    const body = r.json() as { success?: boolean; message?: string };
    assert.equal(body.success, false, r.body);
    assert.match(body.message ?? '', /the flaky probe could not be loaded/);
    assert.equal(r.headers['retry-after'], '1');
    assert.doesNotMatch(r.body, /secret|probe\.ts/, 'the failure named a path');
    assert.equal(flakyLoads, 1);
    const again = await app.inject('/api/file-lazy-flaky');
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(flakyLoads, 2, 'the next request did not load again');
    await app.inject('/api/file-lazy-flaky');
    assert.equal(flakyLoads, 2, 'a loaded implementation was loaded again');
  });

  it('get(): shares a run, keeps a value, forgets a failure', async () => {
    let tries = 0;
    const impl = lazyImpl('a flaky part', async () => {
      tries++;
      if (tries === 1) throw new Error('boom');
      return 'ok';
    });
    await assert.rejects(impl.get(), (err: Error & { status?: number; code?: string; cause?: Error }) => {
      assert.equal(err.status, 503);
      assert.equal(err.code, 'NOT_LOADED');
      assert.match(err.message, /a flaky part could not be loaded/);
      assert.match(String(err.cause?.message), /boom/);
      return true;
    });
    assert.equal(impl.loaded, false);
    const [a, b] = await Promise.all([impl.get(), impl.get()]);
    assert.deepEqual([a, b, await impl.get()], ['ok', 'ok', 'ok']);
    assert.equal(tries, 2);
    assert.equal(impl.loaded, true);
  });

  it('value and settled() never start a load; settled() waits for one under way', async () => {
    let runs = 0;
    let open: () => void = () => {};
    const held = new Promise<void>((r) => {
      open = r;
    });
    const impl = lazyImpl('a closable part', async () => {
      runs++;
      await held;
      return { closed: false };
    });
    assert.equal(impl.value, undefined);
    assert.equal(await impl.settled(), undefined, 'settled() before any request');
    assert.equal(runs, 0, 'value or settled() started a load');
    const first = impl.get();
    const waiting = impl.settled();
    open();
    const part = await first;
    assert.equal(await waiting, part, 'settled() did not wait for the load under way');
    assert.equal(impl.value, part);
    assert.equal(runs, 1);
    // A load that fails leaves settled() with nothing to close.
    const broken = lazyImpl('a broken part', async () => {
      throw new Error('boom');
    });
    const asked = broken.get().catch(() => 'failed');
    assert.equal(await broken.settled(), undefined);
    assert.equal(await asked, 'failed');
  });

  it("starts a server without plantuml-server's handlers, Kroki's error answers or the off admin dashboard", {
    skip: !hooks,
  }, async () => {
    const lazy = {
      plantuml: /\/diagrams\/plantuml\/(handlers|decode|diagram-reply|formats)\.(ts|js)$/,
      krokiErrors: /\/diagrams\/(kroki\/reply|engines\/raster)\.(ts|js)$/,
      admin: /\/admin\/(routes|oidc|page|probes)\.(ts|js)$/,
    };
    const server = await buildTestServer();
    try {
      await server.ready();
      assert.equal((await server.inject('/rest/api/v1/ip')).statusCode, 200);
      for (const [name, re] of Object.entries(lazy))
        assert.deepEqual(loaded(re), [], `a server start loaded ${name}'s modules`);
      // The admin dashboard is off: its routes do not exist, and nothing of it is loaded.
      assert.equal((await server.inject('/rest/api/v1/admin/stats')).statusCode, 404);
      assert.deepEqual(loaded(lazy.admin), [], 'an off admin dashboard loaded its modules');
      // First requests of different PlantUML routes arriving together share one load and answer
      // as before: a decoded source, an encoded one, an unknown format in Kroki's error shape.
      const encoded = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000'; // "Bob -> Alice : hello"
      const [decoded, again, encodedBack, unknown] = await Promise.all([
        server.inject(`/plantuml/coder/${encoded}`),
        server.inject(`/plantuml/coder/${encoded}`),
        server.inject({ method: 'POST', url: '/plantuml/coder', payload: 'Bob -> Alice : hello' }),
        server.inject(`/plantuml/nosuchformat/${encoded}`),
      ]);
      for (const r of [decoded, again]) {
        assert.equal(r?.statusCode, 200, r?.body);
        assert.match(r?.body ?? '', /Bob -> Alice : hello/);
      }
      assert.equal(encodedBack?.statusCode, 200, encodedBack?.body);
      const roundTrip = await server.inject(`/plantuml/coder/${encodedBack?.body}`);
      assert.equal(roundTrip.body, decoded?.body, encodedBack?.body);
      assert.equal(unknown?.statusCode, 404, unknown?.body);
      assert.match(unknown?.body ?? '', /unknown format or diagram type nosuchformat/);
      const handlers = loaded(/\/diagrams\/plantuml\/handlers\.(ts|js)$/);
      assert.equal(handlers.length, 1, "the first PlantUML requests did not load plantuml-server's handlers");
      assert.deepEqual(
        loaded(lazy.plantuml).filter((u) => loadCounts.get(u) !== 1),
        [],
        'requests that arrived together loaded a handler module more than once',
      );
    } finally {
      await server.close();
    }
  });

  it("starts a server without the proxy's forwarding; the first proxied request loads it", {
    skip: !hooks,
  }, async () => {
    const forwarding = /\/proxy\/(forward|policy|subjects|rewrite)\.(ts|js)$/;
    const server = await buildTestServer();
    try {
      await server.ready();
      assert.equal((await server.inject('/rest/api/v1/ip')).statusCode, 200);
      assert.deepEqual(loaded(forwarding), [], "a server start loaded the proxy's forwarding");
      // Refused by the host policy, which comes with the forwarding: no upstream is asked.
      const r = await server.inject({ method: 'DELETE', url: '/proxy/github.com/owner/repo.git/info/refs' });
      assert.equal(r.statusCode, 403, r.body);
      assert.match(r.body, /path not allowed for github\.com/);
      assert.equal(
        loaded(forwarding).length,
        4,
        "the first proxied request did not load the proxy's forwarding",
      );
    } finally {
      await server.close();
    }
  });

  it('loads the admin dashboard when it is on: its routes answer', { skip: !hooks }, async () => {
    const server = await buildTestServer({ env: { DEVUTIL_ADMIN_TOKEN: testSecret('admin-token-') } });
    try {
      await server.ready();
      const r = await server.inject('/rest/api/v1/admin/stats');
      assert.equal(r.statusCode, 401, r.body);
      assert.match(String(r.headers['www-authenticate']), /Bearer/);
      assert.equal(
        [...loads].some((u) => /\/admin\/routes\.(ts|js)$/.test(u)),
        true,
      );
    } finally {
      await server.close();
    }
  });

  it('starts a server without the tus handlers; the first tus request loads them', {
    skip: !hooks,
  }, async () => {
    const tus = (u: string) => /\/files\/tus\/handlers\.(ts|js)$/.test(u);
    const server = await buildTestServer();
    try {
      await server.ready();
      assert.equal((await server.inject('/rest/api/v1/ip')).statusCode, 200);
      assert.equal([...loads].some(tus), false, 'tus handlers were loaded by a server start');
      const r = await server.inject({ method: 'OPTIONS', url: '/api/upload' });
      assert.equal(r.statusCode, 204, r.body);
      assert.equal(r.headers['tus-version'], '1.0.0');
      assert.equal([...loads].some(tus), true, 'the first tus request did not load its handlers');
    } finally {
      await server.close();
    }
  });

  it('starts a server without the Telegram relay, the Kroki renderer, the image or avatar handlers and the avatar service', {
    skip: !hooks,
  }, async () => {
    const lazy = {
      telegram: /\/telegram\/(relay|api-gateway|notice)\.(ts|js)$/,
      kroki: /\/diagrams\/(kroki\/(renderer|handlers)|engines\/process-pool)\.(ts|js)$/,
      image: /\/image\/(handlers|list)\.(ts|js)$/,
      avatar: /\/avatar\/(handlers|answer|service|uploads|github|redirect)\.(ts|js)$/,
    };
    const server = await buildTestServer();
    try {
      await server.ready();
      assert.equal((await server.inject('/rest/api/v1/ip')).statusCode, 200);
      for (const [name, re] of Object.entries(lazy))
        assert.deepEqual(loaded(re), [], `a server start loaded ${name}'s implementation`);
      // Each first request loads its implementation and is answered by it.
      const tg = await server.inject('/telegram/recipients');
      assert.equal(tg.statusCode, 401, tg.body);
      assert.match(tg.body, /Bearer/);
      assert.equal(loaded(lazy.telegram).length, 3, 'the first Telegram request did not load the relay');
      const kroki = await server.inject('/plantuml/graphviz/svg/@@@');
      assert.equal(kroki.statusCode, 400, kroki.body);
      assert.equal(loaded(lazy.kroki).length, 3, 'the first Kroki request did not load the renderer');
      // Its failure is answered in Kroki's shape, by Kroki's error answers loaded then.
      assert.equal(
        [...loads].filter((u) => /\/diagrams\/(kroki\/reply|engines\/raster)\.(ts|js)$/.test(u)).length,
        2,
        "a Kroki failure did not load Kroki's error answers",
      );
      const img = await server.inject('/rest/api/v1/image?width=nope');
      assert.equal(img.statusCode, 400, img.body);
      assert.equal(loaded(lazy.image).length, 2, 'the first image request did not load its handlers');
      // The operator's delete checks the admin token in a hook, before any handler.
      const del = await server.inject({ method: 'DELETE', url: `/avatar/${'0'.repeat(32)}` });
      assert.ok([401, 403].includes(del.statusCode), del.body);
      assert.equal(
        loaded(lazy.avatar).length,
        6,
        'the first avatar request did not load its handlers and service',
      );
    } finally {
      await server.close();
    }
  });
});

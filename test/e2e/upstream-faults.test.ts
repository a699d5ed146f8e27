// Every utility that talks upstream, against an upstream that answers in broken ways (status 999,
// a broken chunk size, garbage, resets, a short body...): the answer is 502 in the utility's own
// envelope (or, for the avatar mirror, Gravatar's own fallback), never 500, and no log line of the
// exchange carries a stack or is logged at error: an upstream's fault is not a bug in devutil.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { FAULTS, type HostileUpstream, startHostileUpstream } from '../fixtures/faults/hostile-upstream.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { assertNoInternals } from '../helpers/leaks.ts';
import { buildTestServer, LogCapture } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

/** Faults that break the body after a good head: a streamed answer may already be under way. */
const MID_BODY = new Set(['broken chunk size mid-body', 'reset mid-body', 'short body']);
const BOT_KEY = '123456789:AAFaultFaultFaultFaultFaultFaultFau';

interface Answer {
  status: number;
  type: string;
  body: string;
  /** The body could not be read to its end (a cut stream). */
  cut: boolean;
}

/** Lines logged since `from` that are errors or carry a stack. */
function badLines(logs: LogCapture, from: number): string[] {
  return logs.lines.slice(from).filter((l) => {
    const o = JSON.parse(l) as { level?: number; err?: { stack?: unknown } };
    return Number(o.level) >= 50 || o.err?.stack !== undefined || /"stack"/.test(l);
  });
}

describe('malformed upstream answers', () => {
  let h: HostileUpstream;
  let app: FastifyInstance;
  let w: World;
  const logs = new LogCapture();
  const proxyLogs = new LogCapture();
  let n = 0;

  before(async () => {
    h = await startHostileUpstream();
    app = await buildTestServer({
      logs,
      overrides: {
        egress: { resolve: [h.resolveFor('fault.test')] },
        avatar: { upstream: 'http://fault.test', upstreamTimeoutMs: 5000, errorTtlSec: 0, missTtlSec: 0 },
        image: {
          upstreamUrl: 'http://fault.test/seed/{id}/{width}/{height}',
          sources: ['upstream'],
          upstreamTimeoutMs: 5000,
          rateLimit: 'off',
        },
        telegram: { apiBase: 'http://fault.test', rateLimit: 'off', keyRateLimit: 'off' },
        diagrams: { proxyHosts: ['fault.test'], prestart: false },
      },
    });
    w = await startWorld({ git: false, logs: proxyLogs });
    // Through the fake internet (TLS): the proxy's routes for uncached and cached objects.
    for (const host of ['codeload.github.com', 'files.pythonhosted.org'])
      w.net.on(host, (req) => h.serve(req.socket));
  });
  after(async () => {
    await app?.close();
    await w?.close();
    await h?.close();
  });

  const inject = async (opts: InjectOptions): Promise<Answer> => {
    const r = await app.inject(opts);
    return { status: r.statusCode, type: String(r.headers['content-type']), body: r.body, cut: false };
  };
  const fetched = async (url: string): Promise<Answer> => {
    const r = await fetch(url);
    let body = '';
    let cut = false;
    try {
      body = await r.text();
    } catch {
      cut = true;
    }
    return { status: r.status, type: String(r.headers.get('content-type')), body, cut };
  };

  const utilities: {
    name: string;
    logs: LogCapture;
    ask: () => Promise<Answer>;
    check: (a: Answer, fault: string) => void;
  }[] = [
    {
      name: 'proxy (uncached)',
      logs: proxyLogs,
      ask: () => fetched(`${w.base}/codeload.github.com/o/r/tar.gz/refs/tags/v${n++}`),
      check: proxyCheck,
    },
    {
      name: 'proxy (cache fill)',
      logs: proxyLogs,
      ask: () => fetched(`${w.base}/files.pythonhosted.org/packages/aa/bb/fault-${n++}.whl`),
      check: proxyCheck,
    },
    {
      name: 'image upstream',
      logs,
      ask: () => inject({ url: `/rest/api/v1/image?id=f${n++}&width=64` }),
      check: (a) => {
        assert.equal(a.status, 502);
        assert.deepEqual(JSON.parse(a.body), { status: 0, message: 'the image upstream failed', data: null });
      },
    },
    {
      name: 'telegram',
      logs,
      ask: () =>
        inject({
          method: 'POST',
          url: '/rest/api/v1/telegram',
          payload: { apiKey: BOT_KEY, chatId: `@devutil_faults_${n++}`, msgText: 'fault' },
        }),
      check: (a) => {
        assert.equal(a.status, 502);
        const b = JSON.parse(a.body) as Record<string, unknown>;
        assert.equal(b['status'], 0);
        assert.equal(b['data'], null);
        assert.equal(typeof b['msg'], 'string');
        assert.ok(!a.body.includes(BOT_KEY), 'the bot key stays out of the answer');
      },
    },
    {
      name: 'plantuml /proxy',
      logs,
      ask: () =>
        inject({
          url: `/plantuml/proxy?fmt=txt&src=${encodeURIComponent(`http://fault.test/d${n++}.puml`)}`,
        }),
      check: (a) => {
        assert.equal(a.status, 502);
        assert.match(a.type, /^text\/plain/);
        assert.match(a.body, /^[^\n]+\n$/);
      },
    },
    {
      // Gravatar's answer for a hash it cannot show, with d=404; an upstream that fails is a miss.
      name: 'avatar mirror',
      logs,
      ask: () => inject({ url: `/avatar/${(n++).toString(16).padStart(32, '0')}?d=404` }),
      check: (a) => assert.equal(a.status, 404),
    },
  ];

  function proxyCheck(a: Answer, fault: string): void {
    if (MID_BODY.has(fault) && a.status === 200) {
      assert.ok(a.cut, 'a body that broke after the head is cut, not ended as if whole');
      return;
    }
    assert.equal(a.status, 502, a.body);
    assert.match(a.type, /^text\/plain/);
    assert.match(a.body, /^upstream [^\n]+\n$/);
  }

  for (const u of utilities)
    describe(u.name, () => {
      for (const fault of Object.keys(FAULTS))
        it(`answers ${fault} without a 500 or a stack in the log`, async () => {
          h.set(fault);
          const from = u.logs.lines.length;
          const a = await u.ask();
          assert.notEqual(a.status, 500, a.body);
          u.check(a, fault);
          assertNoInternals(a.body, `${u.name} answer`);
          // The exchange line of a streamed answer is written when the response closes.
          await new Promise((r) => setTimeout(r, 50));
          assert.deepEqual(badLines(u.logs, from), []);
        });
    });

  describe('plantuml URL include', { skip: toolSkip('java', ['-version']) }, () => {
    let puml: FastifyInstance;
    const pumlLogs = new LogCapture();
    before(async () => {
      puml = await buildTestServer({
        logs: pumlLogs,
        overrides: {
          egress: { resolve: [h.resolveFor('fault.test')] },
          diagrams: { urlAllowlist: ['http://fault.test/'], includeTtlSec: 0 },
        },
      });
    });
    after(async () => puml?.close());
    for (const fault of ['status 999', 'broken chunk size', 'not HTTP at all', 'reset without an answer'])
      it(`renders a diagram whose include answers ${fault}, without a 500 or a stack`, async () => {
        h.set(fault);
        const from = pumlLogs.lines.length;
        const r = await puml.inject({
          method: 'POST',
          url: '/plantuml/txt',
          payload: `@startuml\n!include http://fault.test/inc${n++}.puml\nAlice -> Bob\n@enduml\n`,
        });
        assert.ok(r.statusCode < 500, `${r.statusCode} ${r.body.slice(0, 200)}`);
        assertNoInternals(r.body, 'plantuml answer');
        assert.deepEqual(badLines(pumlLogs, from), []);
      });
  });
});

// The Mermaid types that need a browser, through the Kroki API (their 422 naming the setting while
// the pool is turned off is mermaid-kinds.test.ts's): with the pool on (real Chromium), the
// browserless types still start no browser, a burst of 12 cold requests starts at most the
// configured number of browsers (counted as Chromium processes that are children of this, the
// server's, process) and every answer shows its labels; hostile sources reach no network and run
// no script of theirs; a render past the timeout answers 504, the idle browser exits, and nothing
// is left after the server stops.
// Chromium is required when CI=true.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  childBrowsers,
  chromiumProcesses,
  profileRoot,
  startTrap,
  type Trap,
} from '../../../../test/helpers/chromium.ts';
import { buildTestServer, LogCapture } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = toolSkip(CHROMIUM, ['--version']);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

// The browsers' profiles go under the system temporary directory: a fresh one for this file lets
// the test find every process of its browsers, and only those.
const root = profileRoot();
process.env['TMPDIR'] = root;

// Sampled every 20 ms during the burst: from this process's children, not a walk of all of /proc.
const browsers = () => childBrowsers(root);

function post(app: FastifyInstance, source: string, format = 'svg', remoteAddress = '127.0.0.1') {
  return app.inject({
    method: 'POST',
    url: `/plantuml/mermaid/${format}`,
    payload: source,
    headers: { 'content-type': 'text/plain' },
    remoteAddress,
  });
}

/** A gantt chart of `n` chained tasks: Mermaid takes a while over it. */
function gantt(n: number): string {
  const tasks = Array.from({ length: n }, (_, i) => `  Task${i} :t${i + 1}, after t${i}, 1d`);
  return `gantt\n  dateFormat YYYY-MM-DD\n  section S\n  Start :t0, 2024-01-01, 1d\n${tasks.join('\n')}`;
}

const on = (o: Record<string, unknown> = {}, logs?: LogCapture) =>
  buildTestServer({
    ...(logs ? { logs } : {}),
    overrides: {
      diagrams: {
        prestart: false,
        mermaidChromium: CHROMIUM,
        mermaidBrowsers: 2,
        mermaidBrowserPages: 1,
        mermaidBrowserIdleSec: 0,
        clientShare: 100,
        timeoutMs: 60_000,
        ...o,
      },
    },
  });

describe('Mermaid in a browser, pool on', { skip, timeout: 240_000 }, () => {
  let app: FastifyInstance;
  let trap: Trap;
  let url = '';
  before(async () => {
    trap = await startTrap();
    url = trap.url;
    app = await on();
  });
  after(async () => {
    await app?.close();
    trap?.close();
  });

  it('renders the browserless Mermaid types without starting a browser', async () => {
    for (const source of [
      'graph LR\n  alpha --> beta',
      'sequenceDiagram\n  Alice->>Bob: ping',
      'classDiagram\n  class Animal',
      'stateDiagram-v2\n  [*] --> Still',
      'erDiagram\n  CUSTOMER ||--o{ ORDER : places',
    ]) {
      const r = await post(app, source);
      assert.equal(r.statusCode, 200, r.body.slice(0, 300));
    }
    assert.deepEqual(chromiumProcesses(root), [], 'a Chromium process exists');
  });

  it('serves a burst of 12 cold requests with at most the configured 2 browsers, each with its labels', async () => {
    const seen = new Set<number>();
    let most = 0;
    const sample = () => {
      const b = browsers();
      most = Math.max(most, b.length);
      for (const p of b) seen.add(p.pid);
    };
    const timer = setInterval(sample, 20);
    const sources = Array.from({ length: 12 }, (_, i) =>
      i % 3 === 0
        ? `pie title Burst ${i}\n  "Slice${i}a" : 3\n  "Slice${i}b" : 5`
        : i % 3 === 1
          ? `gantt\n  title Burst ${i}\n  dateFormat YYYY-MM-DD\n  section S${i}\n  Task${i} :t1, 2024-01-01, 3d`
          : `mindmap\n  root((Burst ${i}))\n    Leaf${i}`,
    );
    let answers: Awaited<ReturnType<typeof post>>[];
    try {
      answers = await Promise.all(sources.map((s) => post(app, s)));
    } finally {
      clearInterval(timer);
    }
    sample();
    answers.forEach((r, i) => {
      assert.equal(r.statusCode, 200, `#${i}: ${r.body.slice(0, 300)}`);
      assert.equal(r.headers['content-type'], 'image/svg+xml');
      const label = i % 3 === 0 ? `Slice${i}a` : i % 3 === 1 ? `Task${i}` : `Leaf${i}`;
      assert.ok(r.body.includes(label), `#${i} shows ${label}`);
      assert.match(r.body, /<svg[\s>]/);
    });
    // 12 renders waiting for 2 one-page browsers: the cap is reached, and not passed.
    assert.equal(seen.size, 2, `${seen.size} browsers started (cap 2)`);
    assert.ok(most <= 2, `${most} browsers at once (cap 2)`);
    const png = await post(app, 'pie title Raster\n  "A" : 1', 'png');
    assert.equal(png.statusCode, 200);
    assert.ok(png.rawPayload.subarray(0, 4).equals(PNG));
  });

  const hostile: { what: string; source: () => string; status: number[] }[] = [
    {
      what: 'an <img onerror> in a pie label',
      source: () => `pie title <img src="${url}" onerror="fetch('${url}')">\n  "A" : 1`,
      status: [200, 400],
    },
    {
      what: 'a <script> in a mindmap node',
      source: () => `mindmap\n  root((<script>fetch('${url}')</script>))`,
      status: [200, 400],
    },
    {
      what: 'an init directive asking for securityLevel loose with a click callback',
      source: () =>
        `%%{init: {"securityLevel": "loose"}}%%\ngantt\n  dateFormat YYYY-MM-DD\n  section S\n  Go :g1, 2024-01-01, 1d\n  click g1 href "javascript:fetch('${url}')"`,
      status: [200, 400],
    },
    {
      what: 'a CSS url() in a themeCSS directive',
      source: () => `%%{init: {"themeCSS": "svg { background: url(${url}) }"}}%%\npie title Css\n  "A" : 1`,
      status: [200, 400],
    },
    { what: 'a syntax error', source: () => 'pie title Broken\n  "A" : ', status: [400] },
    { what: 'an unknown diagram type', source: () => 'notADiagram\n  x', status: [400, 422] },
    { what: 'a source over the size cap', source: () => `pie\n${'"A" : 1\n'.repeat(40_000)}`, status: [413] },
  ];
  for (const h of hostile)
    it(`hostile: ${h.what} answers ${h.status.join(' or ')} and reaches no network`, async () => {
      const r = await post(app, h.source());
      assert.ok(h.status.includes(r.statusCode), `${r.statusCode}: ${r.body.slice(0, 300)}`);
      if (r.statusCode === 200) {
        assert.doesNotMatch(r.body, /<script|<img|onerror=|javascript:/i);
      } else assert.match(r.body, /^Error \d{3}: /);
      assert.equal(trap.hits(), 0, 'the loopback trap was reached');
    });

  it('leaves no Chromium process once the server has stopped', async () => {
    assert.ok(browsers().length > 0, 'the browsers are still up before the stop (idle 0 = kept)');
    await app.close();
    assert.deepEqual(chromiumProcesses(root), []);
  });
});

describe('Mermaid in a browser, a render past the timeout', { skip, timeout: 120_000 }, () => {
  it('answers 504, and the idle browser then exits, leaving no process', async () => {
    const app = await on({ timeoutMs: 150, mermaidBrowsers: 1, mermaidBrowserIdleSec: 1 });
    try {
      const r = await post(app, gantt(1500));
      assert.equal(r.statusCode, 504, r.body.slice(0, 300));
      assert.match(r.body, /timed out/);
      assert.ok(browsers().length <= 1);
      await waitFor(() => chromiumProcesses(root).length === 0, 'the idle browser to exit');
    } finally {
      await app.close();
    }
    assert.deepEqual(chromiumProcesses(root), []);
  });
});

describe("Mermaid in a browser, a client's share of the pages", { skip, timeout: 240_000 }, () => {
  it('gives one client half the pages (DEVUTIL_DIAGRAMS_CLIENT_SHARE=50) and another client the rest', async () => {
    const logs = new LogCapture();
    const app = await on({ mermaidBrowsers: 1, mermaidBrowserPages: 2, clientShare: 50 }, logs);
    // Pages asked for (a page opens for a render that no page could take).
    const opened = () => logs.lines.filter((l) => l.includes('mermaid browser page-new')).length;
    try {
      // Four at once from one client: one page at a time is theirs, so one page is opened for them.
      const one = await Promise.all([0, 1, 2, 3].map((i) => post(app, `pie title Share ${i}\n  "A" : 1`)));
      for (const r of one) assert.equal(r.statusCode, 200, r.body.slice(0, 200));
      assert.equal(opened(), 1, 'pages opened for one client');
      // Another client, while the first one's page is busy with a long gantt, gets the second page.
      // That needs the gantt to outlast the other client's render: on a loaded machine a gantt may
      // be done before the other request is even dispatched, so the case runs again with a longer
      // one until the other client's answer came first (the order is checked, never a duration).
      let overlapped = false;
      for (let n = 600; n <= 5400 && !overlapped; n *= 3) {
        let longDone = 0;
        const long = post(app, gantt(n)).then((r) => {
          longDone = performance.now();
          return r;
        });
        // The long one first passes Mermaid's parser in a render process, then takes the client's
        // one page; only then does a second render of the same client queue behind it, and the
        // other client's render ask for a page of its own.
        await waitFor(async () => {
          const m = (await app.inject({ url: '/metrics' })).body;
          return /devutil_diagrams_browser_pages\{state="busy"\} 1\b/.test(m) || longDone !== 0;
        }, 'the long gantt on its page');
        const queued = post(app, `pie title Share ${n}\n  "A" : 1`);
        const other = await post(app, `pie title Other ${n}\n  "B" : 1`, 'svg', '127.0.0.2');
        overlapped = longDone === 0;
        for (const r of [other, await long, await queued])
          assert.equal(r.statusCode, 200, r.body.slice(0, 200));
      }
      assert.ok(overlapped, 'a gantt of 5400 tasks kept its page busy until the other client was answered');
      assert.equal(opened(), 2, 'pages opened for two clients');
    } finally {
      await app.close();
    }
    assert.deepEqual(chromiumProcesses(root), []);
  });
});

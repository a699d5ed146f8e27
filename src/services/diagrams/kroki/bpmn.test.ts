// BPMN through the Kroki API: drawn by bpmn-js in the headless-browser pool with the bpmn.io
// watermark its licence requires kept visible (below the diagram, linking to bpmn.io); XML that is
// not BPMN, or has no diagram to draw, answers 400; hostile XML (an external entity, a script in a
// name) reads no file and runs nothing; with the pool off, 422 names the setting. BPMN and the
// Mermaid types drawn in a browser share one Chromium: a diagram of each leaves one browser process
// (one process tree), not one per kind. Chromium is required when CI=true.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { chromiumProcesses, profileRoot } from '../../../../test/helpers/chromium.ts';
import { assertNoInternals } from '../../../../test/helpers/leaks.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { LANGUAGES } from './languages.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = toolSkip(CHROMIUM, ['--version']);
// The browsers' profiles go under the system temporary directory: a fresh one for this file lets
// the tests find every process of its browsers, and only those.
const root = profileRoot();
process.env['TMPDIR'] = root;
const SAMPLE = LANGUAGES.find((l) => l.type === 'bpmn')!.sample;

function post(app: FastifyInstance, source: string, type = 'bpmn') {
  return app.inject({
    method: 'POST',
    url: `/plantuml/${type}/svg`,
    payload: source,
    headers: { 'content-type': 'text/plain' },
  });
}

describe('BPMN, browser pool off', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { diagrams: { prestart: false, mermaidChromium: 'off' } } });
  });
  after(async () => {
    await app?.close();
  });

  it('answers 422 naming the setting, and /health says why', async () => {
    const r = await post(app, SAMPLE);
    assert.equal(r.statusCode, 422, r.body);
    assert.match(r.body, /DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM/);
    const h = JSON.parse((await app.inject({ url: '/plantuml/health' })).body) as {
      languages: { type: string; available: boolean; reason?: string }[];
    };
    const bpmn = h.languages.find((l) => l.type === 'bpmn');
    assert.equal(bpmn?.available, false);
    assert.match(String(bpmn?.reason), /needs a browser/);
  });
});

// One server (one browser pool) for every case below: it starts cold with both kinds at once.
describe('BPMN in a browser', { skip, timeout: 240_000 }, () => {
  let app: FastifyInstance;
  let closed = false;
  before(async () => {
    app = await buildTestServer({
      overrides: {
        diagrams: {
          prestart: false,
          mermaidChromium: CHROMIUM,
          // Room for a browser per kind: one is used because the kinds share it, not for want of a second.
          mermaidBrowsers: 2,
          mermaidBrowserPages: 2,
          mermaidBrowserIdleSec: 0,
          timeoutMs: 60_000,
        },
      },
    });
  });
  after(async () => {
    if (!closed) await app?.close();
  });

  it('draws a BPMN and a Mermaid pie at once with one Chromium (one browser process)', async () => {
    assert.deepEqual(chromiumProcesses(root), [], 'no browser before the first diagram');
    const [bpmn, pie] = await Promise.all([
      post(app, SAMPLE),
      post(app, 'pie title Shared\n  "Apples" : 3\n  "Pears" : 5', 'mermaid'),
    ]);
    assert.equal(bpmn.statusCode, 200, bpmn.body.slice(0, 300));
    assert.ok(bpmn.body.includes('>devutil<'), 'the BPMN labels');
    assert.equal(pie.statusCode, 200, pie.body.slice(0, 300));
    assert.ok(pie.body.includes('Apples'), 'the pie labels');
    // The browser processes (no --type) that this server started: one, whatever the kinds drawn.
    const browsers = chromiumProcesses(root).filter((p) => p.type === 'browser' && p.ppid === process.pid);
    assert.equal(browsers.length, 1, `browser processes: ${browsers.map((p) => p.pid).join(' ')}`);
    // Both kinds' pages answer again from the same browser (a source not drawn yet: no cache hit).
    const second = await post(app, SAMPLE.replace('name="devutil"', 'name="again"'));
    assert.equal(second.statusCode, 200, second.body.slice(0, 300));
    assert.ok(second.body.includes('>again<'));
    assert.equal((await post(app, 'pie title Again\n  "A" : 1', 'mermaid')).statusCode, 200);
    const again = chromiumProcesses(root).filter((p) => p.type === 'browser' && p.ppid === process.pid);
    assert.deepEqual(
      again.map((p) => p.pid),
      browsers.map((p) => p.pid),
    );
  });

  it('draws the diagram with its labels and the bpmn.io watermark below it', async () => {
    const r = await post(app, SAMPLE);
    assert.equal(r.statusCode, 200, r.body.slice(0, 300));
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.match(r.body, /^<svg[\s>]/);
    assert.ok(r.body.includes('>devutil<'));
    assert.match(r.body, /<a href="https:\/\/bpmn\.io"><svg [^>]*viewBox/, 'the watermark links to bpmn.io');
    const box = /viewBox="([-\d. ]+)"/.exec(r.body)![1]!.split(' ').map(Number);
    const mark = /<a href="https:\/\/bpmn\.io"><svg [^>]*y="([-\d.]+)"/.exec(r.body);
    assert.ok(
      mark && Number(mark[1]) >= box[1]! + box[3]! - 30,
      'the watermark sits in the strip added below',
    );
  });

  for (const [what, source, message] of [
    ['XML that does not parse', '<definitions><process', /bpmn: /],
    ['XML that is not BPMN', '<?xml version="1.0"?><html><body>x</body></html>', /bpmn: /],
    [
      'BPMN without a diagram to draw',
      '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"><process id="p"/></definitions>',
      /no diagram|bpmn: /,
    ],
  ] as const)
    it(`answers ${what} with 400 and bpmn-js's message`, async () => {
      const r = await post(app, source);
      assert.equal(r.statusCode, 400, r.body.slice(0, 300));
      assert.match(r.body, message);
      assertNoInternals(r.body, what);
    });

  it('does not expand nested entities (a billion laughs)', async () => {
    const chain = Array.from({ length: 9 }, (_, i) => {
      const [name, inner] = [String.fromCharCode(98 + i), String.fromCharCode(97 + i)];
      return `<!ENTITY ${name} "${`&${inner};`.repeat(10)}">`;
    }).join('');
    const r = await post(
      app,
      SAMPLE.replace(
        '<definitions',
        `<!DOCTYPE definitions [<!ENTITY a "${'x'.repeat(100)}">${chain}]>\n<definitions`,
      ).replace('name="devutil"', 'name="&j;"'),
    );
    assert.ok([200, 400].includes(r.statusCode), r.body.slice(0, 300));
    assert.ok(r.body.length < 1024 * 1024, 'no expansion');
    // The server still draws a good diagram afterwards.
    assert.equal((await post(app, SAMPLE)).statusCode, 200);
  });

  it('reads no file through an external entity and runs no script from a name', async () => {
    const xxe = SAMPLE.replace(
      '<definitions',
      '<!DOCTYPE definitions [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<definitions',
    ).replace('name="devutil"', 'name="&x;"');
    const r = await post(app, xxe);
    assert.ok([200, 400].includes(r.statusCode), r.body.slice(0, 300));
    assert.doesNotMatch(r.body, /root:x:0/);
    const script = await post(
      app,
      SAMPLE.replace('name="devutil"', 'name="&lt;script&gt;alert(1)&lt;/script&gt;"'),
    );
    assert.equal(script.statusCode, 200, script.body.slice(0, 300));
    assert.doesNotMatch(script.body, /<script/);
    assert.match(script.body, /&lt;script&gt;/);
  });

  it('leaves no Chromium process once the server has stopped', async () => {
    closed = true;
    await app.close();
    assert.deepEqual(chromiumProcesses(root), [], 'a Chromium process outlived the server');
  });
});

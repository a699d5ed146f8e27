// Hostile input for every engine of the Kroki API: a syntax error is 400 with the engine's message,
// a bomb (huge graph, giant canvas, oversize source) ends at the render timeout or a size cap,
// sources that try to read files or URLs or run code do neither, and the server answers the next
// request normally after each row. Never a 500, a stack trace or a hung render.
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../../../../test/helpers/leaks.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { missing } from '../../../../test/helpers/tools.ts';

function complete(n: number, edge: string): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) out.push(`n${i} ${edge} n${j}`);
  return out.join('\n');
}

interface Row {
  type: string;
  what: string;
  source: string;
  /** Acceptable statuses. */
  status: number[];
  /** The body must match (the engine's message) / must not match (a file's content). */
  body?: RegExp;
  not?: RegExp;
  format?: string;
  /** Runs until the render deadline stops it (or a cap): on the bomb server, whose deadline is short. */
  bomb?: true;
}

const ROWS: Row[] = [
  { type: 'graphviz', what: 'syntax error', source: 'digraph {\n a -> \n}', status: [400], body: /line 3/ },
  {
    type: 'graphviz',
    what: 'a complete graph (layout bomb)',
    bomb: true,
    source: `digraph { ${complete(120, '->')} }`,
    status: [504],
  },
  {
    type: 'graphviz',
    what: 'an image attribute naming a server file',
    source: 'digraph { a [image="/etc/passwd" label="x"] }',
    status: [200, 400],
    not: /root:x:0/,
  },
  {
    type: 'graphviz',
    what: 'a giant canvas as PNG',
    source: 'digraph { size="100000,100000!" ratio=fill a -> b }',
    status: [200, 413],
    format: 'png',
  },
  {
    type: 'mermaid',
    what: 'a type that needs a browser',
    source: 'gantt\n  title x\n',
    status: [422],
    body: /"gantt"/,
  },
  { type: 'mermaid', what: 'no diagram type', source: '%% only a comment', status: [400], body: /line:? 1/ },
  {
    type: 'mermaid',
    what: 'a script in a label',
    source: 'graph LR\n  a["<script>alert(1)</script>"] --> b',
    status: [200, 400],
  },
  { type: 'd2', what: 'syntax error', source: 'a -> b\nc -> {', status: [400], body: /line|:\d+/ },
  { type: 'nomnoml', what: 'unbalanced brackets', source: '[a]->[b', status: [400] },
  {
    type: 'wavedrom',
    what: 'code instead of data',
    source: '{ signal: [ process.exit(1) ] }',
    status: [400],
  },
  { type: 'wavedrom', what: 'not an object', source: '42', status: [400] },
  { type: 'vega', what: 'invalid JSON', source: '{"marks": [', status: [400] },
  {
    type: 'vega',
    what: 'data from a URL (metadata service)',
    source:
      '{"data":[{"name":"t","url":"http://169.254.169.254/latest/meta-data"}],"marks":[{"type":"rect","from":{"data":"t"}}]}',
    status: [400],
    body: /not allowed/,
  },
  { type: 'vega', what: 'deep nesting', source: `${'['.repeat(5000)}${']'.repeat(5000)}`, status: [400] },
  {
    type: 'vegalite',
    what: 'an unknown mark',
    source: '{"mark": "nosuchmark", "data": {"values": []}}',
    status: [400],
  },
  {
    type: 'vegalite',
    what: 'data from a file',
    source: '{"data": {"url": "file:///etc/passwd"}, "mark": "point"}',
    status: [400],
    not: /root:x:0/,
  },
  { type: 'erd', what: 'unknown cardinality', source: '[a]\n[b]\na 1--x b', status: [400], body: /line 3/ },
  {
    type: 'erd',
    what: 'deeply nested braces',
    source: `[a]\nx ${'{'.repeat(50_000)}${'}'.repeat(50_000)}`,
    status: [400],
    body: /line 2/,
  },
  {
    type: 'erd',
    what: 'a script in a name',
    source: '[a]\n*"<script>alert(1)</script>"',
    status: [200],
    not: /<script>/,
  },
  {
    type: 'erd',
    what: 'a complete graph of relationships (layout bomb)',
    bomb: true,
    source: `${Array.from({ length: 120 }, (_, i) => `[n${i}]`).join('\n')}\n${complete(120, '1--*')}`,
    status: [504],
  },
  { type: 'excalidraw', what: 'invalid JSON', source: '{"elements": [', status: [400], body: /not JSON/ },
  {
    type: 'excalidraw',
    what: 'a wrong schema',
    source: '{"elements": [{"type": "rectangle", "x": "0"}]}',
    status: [400],
    body: /elements\[0\]\.x must be a number/,
  },
  {
    type: 'excalidraw',
    what: 'a colour that leaves its attribute',
    source:
      '{"elements": [{"type": "text", "x": 0, "y": 0, "text": "a", "strokeColor": "red\\" onload=\\"alert(1)"}]}',
    status: [400],
    body: /not a colour/,
  },
  {
    type: 'excalidraw',
    what: 'a script in a text',
    source: '{"elements": [{"type": "text", "x": 0, "y": 0, "text": "<script>alert(1)</script>"}]}',
    status: [200],
    not: /<script>/,
  },
  {
    type: 'excalidraw',
    what: 'a giant hachured rectangle (fill bomb)',
    bomb: true,
    source:
      '{"elements": [{"type": "rectangle", "x": 0, "y": 0, "width": 100000, "height": 100000, "backgroundColor": "red", "fillStyle": "cross-hatch", "strokeWidth": 0.1}]}',
    status: [200, 413, 422, 504],
  },
  // This server runs no browser (the Mermaid rows above need it off): BPMN names the setting.
  // Hostile BPMN in a browser (unparsable, external entities, entity expansion) is in bpmn.test.ts.
  {
    type: 'bpmn',
    what: 'the browser pool off',
    source: '<definitions/>',
    status: [422],
    body: /DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM/,
  },
  { type: 'bytefield', what: 'host interop', source: '(js/process.exit 1)', status: [400] },
  { type: 'bytefield', what: 'syntax error', source: '(draw-box "a"', status: [400] },
  { type: 'dbml', what: 'syntax error', source: 'Table users {\n  id integer [pk\n}', status: [400] },
  { type: 'pikchr', what: 'syntax error', source: 'box "a"\nnosuchshape', status: [400], body: /line:? 2/ },
  { type: 'svgbob', what: 'control characters', source: '\u0000\u0001\u001b[31m-->', status: [200] },
  {
    type: 'blockdiag',
    what: 'an icon URL',
    source: 'blockdiag { a [icon = "http://169.254.169.254/"]; }',
    status: [400],
  },
  {
    type: 'blockdiag',
    what: 'a background file',
    source: 'blockdiag { a [background = "/etc/passwd"]; }',
    status: [400],
  },
  {
    type: 'seqdiag',
    what: 'syntax error',
    source: 'seqdiag {\n  a -> ;\n}',
    status: [400],
    body: /line:? 2/,
  },
];

/** A test server for the rows; `timeoutMs` is its render deadline. */
async function hostileServer(timeoutMs: number): Promise<{ app: FastifyInstance; available: Set<string> }> {
  const app = await buildTestServer({
    overrides: {
      // No browser pool: the browser-only Mermaid types answer 422 here (browser.test.ts has them drawn).
      diagrams: {
        prestart: false,
        timeoutMs,
        renderThreads: 2,
        cacheMemory: 0,
        cacheDisk: 0,
        mermaidChromium: 'off',
      },
    },
  });
  const h = JSON.parse((await app.inject({ url: '/plantuml/health' })).body) as {
    languages: { type: string; available: boolean }[];
  };
  return { app, available: new Set(h.languages.filter((l) => l.available).map((l) => l.type)) };
}

/** One row through `server`, then the server answers its health check. */
async function check(server: { app: FastifyInstance; available: Set<string> }, row: Row, t: TestContext) {
  const { app, available } = server;
  if (!available.has(row.type) && row.type !== 'bpmn') {
    if (row.type.endsWith('diag')) return t.skip(missing(`${row.type} is not installed`));
    assert.fail(`${row.type} is not available`);
  }
  const r = await app.inject({
    method: 'POST',
    url: `/plantuml/${row.type}/${row.format ?? 'svg'}`,
    payload: row.source,
    headers: { 'content-type': 'text/plain' },
  });
  assert.ok(row.status.includes(r.statusCode), `${r.statusCode}: ${r.body.slice(0, 300)}`);
  if (row.body) assert.match(r.body, row.body);
  if (row.not) assert.doesNotMatch(r.body, row.not);
  if (r.statusCode >= 400) assert.match(r.body, new RegExp(`^Error ${r.statusCode}: `));
  assertNoInternals(r.body, `${row.type} ${row.what}`);
  if (r.headers['content-type'] === 'image/svg+xml')
    assert.match(String(r.headers['content-security-policy']), /default-src 'none'.*sandbox/);
  // The engine still serves a good diagram afterwards.
  const ok = await app.inject({ url: '/plantuml/health' });
  assert.equal(ok.statusCode, 200);
}

describe('Kroki API hostile input', { timeout: 300_000 }, () => {
  let server: { app: FastifyInstance; available: Set<string> };
  before(async () => {
    // No bomb runs here: a deadline that a cold engine (seqdiag's Python) on a busy machine does not
    // pass (4 s did at load 50: a 504 for a syntax error).
    server = await hostileServer(30_000);
  });
  after(async () => {
    await server?.app.close();
  });

  for (const row of ROWS.filter((r) => !r.bomb))
    it(`${row.type}: ${row.what} -> ${row.status.join(' or ')}`, (t) => check(server, row, t));

  it('refuses a source over the size cap in every language with 413', async () => {
    const { app } = server;
    const big = 'x'.repeat(300 * 1024);
    for (const type of ['graphviz', 'mermaid', 'vega', 'pikchr']) {
      const r = await app.inject({ method: 'POST', url: `/plantuml/${type}/svg`, payload: big });
      assert.equal(r.statusCode, 413, type);
    }
  });

  it('counts the size cap in bytes: a source over it in UTF-8 bytes but under it in characters gets 413', async () => {
    const { app } = server;
    // 90,000 three-byte characters: 270,000 bytes, over the default 256 KiB; 90,000 characters, under it.
    const source = '\u20ac'.repeat(90_000);
    for (const [what, payload, type] of [
      ['a text body', source, 'text/plain'],
      ['a JSON body', JSON.stringify({ diagram_source: source }), 'application/json'],
    ] as const) {
      const r = await app.inject({
        method: 'POST',
        url: '/plantuml/graphviz/svg',
        payload,
        headers: { 'content-type': type },
      });
      assert.equal(r.statusCode, 413, `${what}: ${r.body.slice(0, 200)}`);
    }
  });
});

// A bomb spins a core (its render process) until the deadline kills it: it is never done in time,
// so a short deadline proves the same as a long one for less CPU (these bombs took 4 s of a core
// each when they shared the 4 s deadline of the cases above).
describe('Kroki API hostile input, bombs', { timeout: 300_000 }, () => {
  let server: { app: FastifyInstance; available: Set<string> };
  before(async () => {
    server = await hostileServer(1500);
  });
  after(async () => {
    await server?.app.close();
  });

  for (const row of ROWS.filter((r) => r.bomb))
    it(`${row.type}: ${row.what} -> ${row.status.join(' or ')}`, (t) => check(server, row, t));

  it('serves a small Graphviz diagram after a bomb timed out (the thread was replaced)', async () => {
    const small = () =>
      server.app.inject({
        method: 'POST',
        url: '/plantuml/graphviz/svg',
        payload: 'digraph { after -> bomb }',
      });
    let r = await small();
    // The short deadline is the bombs': a busy machine may pass it with this small one too. A
    // renderer that was not replaced answers no attempt.
    for (let i = 0; i < 3 && r.statusCode === 504; i++) r = await small();
    assert.equal(r.statusCode, 200, r.body.slice(0, 300));
    assert.match(r.body, /after/);
  });
});

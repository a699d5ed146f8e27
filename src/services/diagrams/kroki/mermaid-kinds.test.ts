// Every diagram kind Mermaid 11 draws, through the Kroki API with the DEFAULT configuration (the
// browser pool finds the system's Chromium by itself): each answers a valid SVG with its labels and
// no reference outside it; what Mermaid's own parser rejects answers 400 with Mermaid's message and
// its line, drawn by beautiful-mermaid or by the browser alike, and with the browser pool off too;
// with the pool off, the browser-only kinds answer 422 naming the setting. One server (and its
// browsers) serves the first describe's cases. Chromium is required when CI=true.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { chromiumProcesses, profileRoot } from '../../../../test/helpers/chromium.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { findChromium } from '../engines/find-chromium.ts';
import { externalReferences } from '../engines/svg-refs.ts';

const skip = toolSkip('/usr/bin/chromium', ['--version']);
const root = profileRoot();
process.env['TMPDIR'] = root;

/** One sample per kind Mermaid 11.x registers (zenuml is a separate package, not bundled), with labels it shows. */
const KINDS: { kind: string; source: string; labels: string[] }[] = [
  { kind: 'flowchart', source: 'flowchart LR\n  Alpha --> Beta', labels: ['Alpha', 'Beta'] },
  { kind: 'sequence', source: 'sequenceDiagram\n  Alice->>Bob: Hello', labels: ['Alice', 'Hello'] },
  { kind: 'class', source: 'classDiagram\n  class Animal {\n    +String name\n  }', labels: ['Animal'] },
  { kind: 'state', source: 'stateDiagram-v2\n  [*] --> Idle\n  Idle --> Busy', labels: ['Idle', 'Busy'] },
  { kind: 'er', source: 'erDiagram\n  CUSTOMER ||--o{ ORDER : places', labels: ['CUSTOMER', 'places'] },
  {
    kind: 'journey',
    source: 'journey\n  title Morning\n  section Wake\n    Coffee: 5: Me',
    labels: ['Coffee'],
  },
  {
    kind: 'gantt',
    source: 'gantt\n  title Plan\n  dateFormat YYYY-MM-DD\n  section Build\n  Design :a1, 2024-01-01, 3d',
    labels: ['Design', 'Build'],
  },
  { kind: 'pie', source: 'pie title Pets\n  "Dogs" : 3\n  "Cats" : 5', labels: ['Dogs', 'Cats'] },
  {
    kind: 'quadrantChart',
    source:
      'quadrantChart\n  title Reach\n  x-axis Low --> High\n  y-axis Small --> Big\n  Campaign: [0.3, 0.6]',
    labels: ['Campaign'],
  },
  {
    kind: 'requirementDiagram',
    source:
      'requirementDiagram\n  requirement SpeedReq {\n    id: 1\n    text: fast\n    risk: high\n    verifymethod: test\n  }',
    labels: ['SpeedReq'],
  },
  {
    kind: 'gitGraph',
    source: 'gitGraph\n  commit id: "Init"\n  branch feature\n  commit id: "Work"',
    labels: ['feature'],
  },
  {
    kind: 'C4Context',
    source:
      'C4Context\n  title Banking\n  Person(customer, "Customer")\n  System(bank, "Bank")\n  Rel(customer, bank, "Uses")',
    labels: ['Customer', 'Uses'],
  },
  { kind: 'mindmap', source: 'mindmap\n  root((Ideas))\n    Branch', labels: ['Ideas', 'Branch'] },
  {
    kind: 'timeline',
    source: 'timeline\n  title History\n  2020 : Founded\n  2021 : Grew',
    labels: ['Founded'],
  },
  { kind: 'sankey-beta', source: 'sankey-beta\nSource,Target,10\nSource,Other,5', labels: ['Target'] },
  {
    kind: 'xychart-beta',
    source:
      'xychart-beta\n  title "Sales"\n  x-axis [jan, feb]\n  y-axis "Revenue" 0 --> 100\n  bar [40, 60]',
    labels: ['Sales'],
  },
  { kind: 'block-beta', source: 'block-beta\n  columns 2\n  Front Back', labels: ['Front', 'Back'] },
  {
    kind: 'packet-beta',
    source: 'packet-beta\n  0-15: "SourcePort"\n  16-31: "DestPort"',
    labels: ['SourcePort'],
  },
  {
    kind: 'kanban',
    source: 'kanban\n  Todo\n    task1[Write docs]\n  Done\n    task2[Ship]',
    labels: ['Todo', 'Ship'],
  },
  {
    kind: 'architecture-beta',
    source:
      'architecture-beta\n  group api(cloud)[API]\n  service db(database)[Database] in api\n  service server(server)[Server] in api\n  db:L -- R:server',
    labels: ['Database', 'Server'],
  },
  {
    kind: 'radar-beta',
    source:
      'radar-beta\n  title Skills\n  axis A["Speed"], B["Power"], C["Range"]\n  curve c1["Hero"]{1, 2, 3}',
    labels: ['Speed'],
  },
  { kind: 'treemap-beta', source: 'treemap-beta\n"Root"\n    "Leaf": 10\n    "Other": 20', labels: ['Leaf'] },
];

/** What Mermaid rejects (beautiful-mermaid drew the first three with the bad parts dropped), and the line. */
const BROKEN: { what: string; source: string; line: number }[] = [
  { what: 'an arrow at the end', source: 'graph TD\n  a -->', line: 2 },
  { what: 'no diagram at all', source: '}}}', line: 1 },
  {
    what: 'a message without a target',
    source: 'sequenceDiagram\n  Alice->>Bob: hi\n  Alice->>: lost',
    line: 3,
  },
  {
    what: 'a gantt line that is no task',
    source: 'gantt\n  dateFormat YYYY-MM-DD\n  section S\n  Ok :a1, 2024-01-01, 1d\n  not a task here',
    line: 5,
  },
  { what: 'a pie slice without a value', source: 'pie title Pets\n  "Dogs" : 3\n  "Cats" :', line: 3 },
];

after(() => rmSync(root, { recursive: true, force: true }));

const kroki = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');

function post(app: FastifyInstance, source: string, accept = 'application/json') {
  return app.inject({
    method: 'POST',
    url: '/plantuml/mermaid/svg',
    payload: source,
    headers: { 'content-type': 'text/plain', accept },
  });
}

/** The Kroki error message of a JSON answer. */
const messageOf = (body: string) => (JSON.parse(body) as { error: { message: string } }).error.message;

describe('Mermaid kinds with the default configuration', { skip, timeout: 600_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    // Only the render deadline is raised (a cold Chromium on a busy machine): the rest is default.
    app = await buildTestServer({ overrides: { diagrams: { prestart: false, timeoutMs: 60_000 } } });
  });
  after(async () => {
    await app?.close();
  });

  for (const k of KINDS) {
    it(`draws ${k.kind} as an SVG with its labels and nothing outside it`, async () => {
      const r = await app.inject({ url: `/plantuml/mermaid/svg/${kroki(k.source)}` });
      assert.equal(r.statusCode, 200, r.body.slice(0, 400));
      assert.equal(r.headers['content-type'], 'image/svg+xml');
      assert.match(r.body, /^(?:<\?xml[^>]*>\s*)?<svg[\s>]/);
      assert.match(r.body, /<\/svg>\s*$/);
      for (const label of k.labels) assert.ok(r.body.includes(label), `${k.kind} shows ${label}`);
      assert.deepEqual(externalReferences(r.body), []);
    });
  }

  for (const b of BROKEN) {
    it(`answers 400 with Mermaid's message and line ${b.line} for ${b.what}`, async () => {
      for (const r of [
        await post(app, b.source),
        await app.inject({
          url: `/plantuml/mermaid/svg/${kroki(b.source)}`,
          headers: { accept: 'application/json' },
        }),
      ]) {
        assert.equal(r.statusCode, 400, r.body.slice(0, 400));
        const message = messageOf(r.body);
        assert.match(message, new RegExp(`line:? ${b.line}\\b`), message);
      }
    });
  }
});

describe('Mermaid with the browser pool off', { timeout: 120_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { diagrams: { prestart: false, mermaidChromium: 'off' } } });
  });
  after(async () => {
    await app?.close();
  });

  it('answers 422 for a browser-only kind, naming the setting, and starts no browser', async () => {
    const r = await post(app, 'pie title Pets\n  "Dogs" : 3');
    assert.equal(r.statusCode, 422, r.body.slice(0, 400));
    assert.match(messageOf(r.body), /"pie".*DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM=off/);
    assert.deepEqual(chromiumProcesses(root), []);
  });

  it("still checks a browser-only kind with Mermaid's parser: 400 with the line", async () => {
    const r = await post(app, 'gantt\n  dateFormat YYYY-MM-DD\n  section S\n  not a task here');
    assert.equal(r.statusCode, 400, r.body.slice(0, 400));
    assert.match(messageOf(r.body), /line:? 4\b/);
  });

  it('finds a Chromium on PATH, a headless shell first, and none where there is none', () => {
    const dir = join(root, 'bin');
    mkdirSync(dir, { recursive: true });
    assert.equal(findChromium(dir, [], []), null);
    const put = (name: string) => {
      writeFileSync(join(dir, name), '#!/bin/sh\n');
      chmodSync(join(dir, name), 0o755);
    };
    put('chromium');
    assert.equal(findChromium(`/nonexistent:${dir}`, [], []), join(dir, 'chromium'));
    const shell = join(root, 'shell');
    writeFileSync(shell, '#!/bin/sh\n');
    chmodSync(shell, 0o755);
    assert.equal(findChromium(dir, [], [shell]), shell);
    put('chrome-headless-shell');
    assert.equal(findChromium(dir, [], [shell]), join(dir, 'chrome-headless-shell'));
  });
});

// Kroki API (issue 24): Graphviz in process against spawning `dot -Tsvg` per diagram (the anchor a
// Kroki server is: one process per request), same corpus, uncached (every request a new graph), at
// concurrency 1 and 4 (target >= 3x); cached hits of every language against a cached PlantUML hit
// (target >= 0.9x); RSS of the whole server (node + JVMs + render threads) with every engine loaded
// against the same server before any Kroki engine ran. A bare Node http server that spawns dot is
// the anchor (the simplest code doing the job). Mermaid, uncached, against mmdc
// (@mermaid-js/mermaid-cli, one process and one Chromium per diagram, the same system Chromium):
// the browserless types (target >= 20x the throughput, <= 1/5 of the peak memory: PSS of
// each side's process tree, as a browser's processes share much of theirs) and a type drawn in
// devutil's Chromium pool (DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM; no target in the issue), c=1 and c=4.
//   BENCH_SECONDS (5), BENCH_CHROMIUM (/usr/bin/chromium), BENCH_MMDC_RUNS (4: diagrams per mmdc row),
//   BENCH_ONLY (kroki | mermaid: one of the two parts)
import { spawn } from 'node:child_process';
import { deflateSync } from 'node:zlib';
import { LANGUAGES } from '../src/services/diagrams/kroki/languages.ts';
import { freePort } from '../test/helpers/ports.ts';
import { measure, mmdcJobs, treePss } from './anchors/mmdc.ts';
import {
  header,
  invalid,
  type Row,
  report,
  requireCommand,
  startDevutil,
  tempFile,
  treeRss,
  wrk,
} from './lib.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const enc = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');

/** A graph of moderate size, different for every i. */
function graph(i: number): string {
  const edges: string[] = [];
  for (let k = 0; k < 12; k++) edges.push(`n${k} -> n${(k * 5 + i) % 12} [label="e${i}_${k}"]`);
  return `digraph g${i} { rankdir=LR; ${edges.join('; ')} }`;
}

/** A wrk script walking `paths` in order (each thread its own offset). */
function walker(paths: string[]): string {
  const lines = paths.map((p) => `  "${p}",`).join('\n');
  return tempFile(
    'walk.lua',
    `local paths = {\n${lines}\n}\nlocal i = math.random(#paths)\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend\n`,
  );
}

/** Graphviz source of graph(i), for the anchor's own process. */
const ANCHOR = `
const { spawn } = require('node:child_process');
${graph.toString()}
require('node:http').createServer((req, res) => {
  const i = Number(/(\\d+)$/.exec(req.url)?.[1] ?? 0);
  const dot = spawn('dot', ['-Tsvg'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const out = [];
  dot.stdout.on('data', (b) => out.push(b));
  dot.on('close', (code) => {
    res.writeHead(code === 0 ? 200 : 500, { 'content-type': 'image/svg+xml' });
    res.end(Buffer.concat(out));
  });
  dot.stdin.end(graph(i));
}).listen(+process.env.PORT, '127.0.0.1');
`;

/**
 * The anchor: a bare node:http server, in a process of its own (wrk runs synchronously here), that
 * spawns `dot -Tsvg` for each request's graph.
 */
async function startDotServer(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', ANCHOR], {
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`${url}/g/0`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    close: async () => {
      child.kill();
    },
  };
}

/** GET, retried once: an idle keep-alive socket the server closed meanwhile fails the first try. */
async function get(url: string): Promise<number> {
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(url, { headers: { connection: 'close' } });
      await r.arrayBuffer();
      return r.status;
    } catch (err) {
      if (i >= 2) throw err;
    }
  }
}

async function main(): Promise<void> {
  requireCommand('wrk');
  requireCommand('dot', 'graphviz');
  header('Kroki API: Graphviz in process vs dot per request; cached hits per language; RSS');
  const dev = await startDevutil({
    DEVUTIL_DIAGRAMS_WORKERS: '1',
    DEVUTIL_DIAGRAMS_RATE_LIMIT: 'off',
    DEVUTIL_DIAGRAMS_QUEUE_SIZE: '256',
    DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100',
  });
  const anchor = await startDotServer();
  const rows: Row[] = [];
  try {
    // Warm: PlantUML's JVM and the Graphviz engine in both render threads.
    await get(`${dev.url}/plantuml/plantuml/svg/${enc('A -> B')}`);
    const rssBefore = treeRss(dev.pid);
    await Promise.all(
      [0, 1, 2, 3].map((i) => get(`${dev.url}/plantuml/graphviz/svg/${enc(graph(1e6 + i))}`)),
    );
    let seq = 0;
    for (const c of [1, 4]) {
      const n = 4000;
      const devPaths = Array.from({ length: n }, () => `/plantuml/graphviz/svg/${enc(graph(seq++))}`);
      const d = wrk(dev.url, { connections: c, durationSec: SECONDS, script: walker(devPaths) });
      const a = wrk(anchor.url, {
        connections: c,
        durationSec: SECONDS,
        script: walker(Array.from({ length: n }, () => `/g/${seq++}`)),
      });
      rows.push({
        metric: `graphviz uncached c=${c}`,
        devutil: d.rps,
        anchor: a.rps,
        unit: 'req/s',
        higherIsBetter: true,
        target: 3,
        invalid: invalid({ devutil: d, dot: a }),
      });
    }
    report('Graphviz uncached', 'dot spawn', rows);

    // Cached hits: every language's sample (rendered once), against a cached PlantUML hit.
    const hitRows: Row[] = [];
    const puml = `/plantuml/plantuml/svg/${enc('Alice -> Bob : cached hit')}`;
    await get(dev.url + puml);
    for (const l of LANGUAGES) {
      if (l.kind === 'plantuml') continue;
      const path = `/plantuml/${l.type}/${l.formats[0]}/${enc(l.sample)}`;
      const status = await get(dev.url + path);
      if (status !== 200) {
        console.log(`# ${l.type}: ${status} (not available here), no hit row`);
        continue;
      }
      // The anchor is measured next to each row (before and after, the mean of the two): one anchor
      // for the whole table let the machine's drift over 2 minutes decide rows near the target.
      const before = wrk(dev.url, { connections: 4, durationSec: SECONDS, script: walker([puml]) });
      const h = wrk(dev.url, { connections: 4, durationSec: SECONDS, script: walker([path]) });
      const after = wrk(dev.url, { connections: 4, durationSec: SECONDS, script: walker([puml]) });
      hitRows.push({
        metric: `${l.type} cached hit c=4`,
        devutil: h.rps,
        anchor: (before.rps + after.rps) / 2,
        unit: 'req/s',
        higherIsBetter: true,
        target: 0.9,
        invalid: invalid({ devutil: h, plantuml: [before, after] }),
      });
    }
    report('Cached hits', 'PlantUML hit', hitRows);

    const rssAll = treeRss(dev.pid);
    report('Memory', 'before Kroki engines', [
      {
        metric: 'RSS, every engine loaded',
        devutil: rssAll / 2 ** 20,
        anchor: rssBefore / 2 ** 20,
        unit: 'MiB',
        higherIsBetter: false,
        target: 1.5,
      },
    ]);
  } finally {
    await dev.close();
    await anchor.close();
  }
}

/** A pie chart and a flowchart of moderate size, different for every i. */
const pie = (i: number) =>
  `pie title Run ${i}\n${Array.from({ length: 6 }, (_, k) => `  "slice${i}_${k}" : ${k + 1 + (i % 7)}`).join('\n')}`;
const flow = (i: number) =>
  `graph LR\n${Array.from({ length: 10 }, (_, k) => `  n${k}[node${i}_${k}] --> n${(k * 3 + i) % 10}`).join('\n')}`;

/** Mermaid, uncached, devutil (browserless and browser pool) against mmdc with the same Chromium. */
async function mermaid(): Promise<void> {
  const chromium = process.env['BENCH_CHROMIUM'] ?? '/usr/bin/chromium';
  requireCommand(chromium);
  const runs = Number(process.env['BENCH_MMDC_RUNS'] ?? 4);
  const dev = await startDevutil({
    DEVUTIL_DIAGRAMS_WORKERS: '1',
    DEVUTIL_DIAGRAMS_PRESTART: 'false',
    DEVUTIL_DIAGRAMS_RATE_LIMIT: 'off',
    DEVUTIL_DIAGRAMS_QUEUE_SIZE: '256',
    DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100',
    DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM: chromium,
  });
  const rows: Row[] = [];
  let seq = 0;
  const devJobs = (make: (i: number) => string, n: number) =>
    Array.from({ length: n }, () => {
      const path = `${dev.url}/plantuml/mermaid/svg/${enc(make(seq++))}`;
      return async () => (await get(path)) === 200;
    });
  try {
    // The browserless type first: no browser is up while it is measured (they start on the first pie).
    for (const [kind, make, warm] of [
      ['flowchart (no browser)', flow, 2],
      ['pie (browser pool)', pie, 4],
    ] as const) {
      // Warm: beautiful-mermaid in both render threads; the 2 browsers and their 2 x 2 pages.
      await Promise.all(devJobs(make, warm).map((j) => j()));
      for (const c of [1, 4]) {
        // As many diagrams as fit in BENCH_SECONDS at the speed of a first short run.
        const probe = await measure(devJobs(make, 4 * c), c, () => treePss(dev.pid));
        const d = await measure(devJobs(make, Math.max(8, Math.round(probe.rps * SECONDS))), c, () =>
          treePss(dev.pid),
        );
        const m = mmdcJobs(
          Array.from({ length: Math.max(runs, c) }, () => make(seq++)),
          chromium,
        );
        const a = await measure(m.jobs, c, m.pss);
        const bad =
          d.failures || a.failures ? `failures: devutil ${d.failures}, mmdc ${a.failures}` : undefined;
        const browserless = kind.startsWith('flowchart');
        rows.push({
          metric: `mermaid ${kind} c=${c}`,
          devutil: d.rps,
          anchor: a.rps,
          unit: 'diagrams/s',
          higherIsBetter: true,
          ...(browserless ? { target: 20 } : {}),
          ...(bad ? { invalid: bad } : {}),
        });
        rows.push({
          metric: `  peak PSS c=${c}`,
          devutil: d.peakPss / 2 ** 20,
          anchor: a.peakPss / 2 ** 20,
          unit: 'MiB',
          higherIsBetter: false,
          ...(browserless ? { target: 0.2 } : {}),
        });
      }
    }
    report('Mermaid uncached', 'mmdc', rows);
  } finally {
    await dev.close();
  }
}

const only = process.env['BENCH_ONLY'];
if (only !== 'mermaid') await main();
if (only === undefined || only === 'mermaid') await mermaid();

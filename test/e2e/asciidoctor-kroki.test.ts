// Issue 24, acceptance 2 (and 3, first half): a real Kroki client used as it is. Asciidoctor.js with
// the asciidoctor-kroki extension (both from npm) converts a document with several diagram languages
// against devutil's Kroki API, downloading each image (kroki-fetch-diagram), once by GET and once by
// POST. The extension fetches synchronously (a child process per request), so devutil runs in a
// process of its own; while it renders Mermaid no browser process is started.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';

const require = createRequire(import.meta.url);

const DOC = `= Diagrams through devutil

[plantuml]
....
Alice -> Bob : plantuml-label
....

[graphviz]
....
digraph { graphviz_label -> b }
....

[mermaid]
....
graph LR
  A[mermaid-label] --> B
....

[nomnoml]
....
[nomnoml-label]->[Other]
....

[vegalite]
....
{"title": "vegalite-label", "data": {"values": [{"a": 1}]}, "mark": "point", "encoding": {"x": {"field": "a", "type": "quantitative"}}}
....

[d2]
....
d2-label -> other
....
`;
const LABELS = [
  'plantuml-label',
  'graphviz_label',
  'mermaid-label',
  'nomnoml-label',
  'vegalite-label',
  'd2-label',
];

/** Every process below `pid` (its children's children too), by command name. */
async function descendants(pid: number): Promise<string[]> {
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
      names.set(
        Number(e),
        await readlink(`/proc/${e}/exe`).catch(() =>
          stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        ),
      );
    } catch {}
  }
  const out: string[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(names.get(c) ?? '?');
      walk(c);
    }
  };
  walk(pid);
  return out;
}

describe('asciidoctor-kroki against devutil', { timeout: 240_000 }, () => {
  let dev: DevutilProcess;
  before(async () => {
    dev = await startDevutilProcess({ DEVUTIL_DIAGRAMS_TIMEOUT_MS: '30s' });
  });
  after(async () => {
    await dev?.stop();
  });

  for (const method of ['get', 'post'] as const)
    it(`converts a document with six diagram languages (${method})`, async () => {
      const asciidoctor = require('@asciidoctor/core')();
      const kroki = require('asciidoctor-kroki');
      const registry = asciidoctor.Extensions.create();
      kroki.register(registry);
      const out = tempDir('devutil-adoc-');
      const html: string = asciidoctor.convert(DOC, {
        safe: 'safe',
        extension_registry: registry,
        attributes: {
          'kroki-server-url': `${dev.url}/plantuml`,
          'kroki-fetch-diagram': true,
          'kroki-http-method': method,
          imagesoutdir: out,
          imagesdir: out,
        },
      });
      const files = readdirSync(out).filter((f) => f.endsWith('.svg'));
      assert.equal(
        files.length,
        LABELS.length,
        `one image per diagram: ${files.join(' ')}\n${dev.output().slice(-2000)}`,
      );
      const svgs = files.map((f) => readFileSync(join(out, f), 'utf8'));
      for (const label of LABELS)
        assert.ok(
          svgs.some((s) => s.includes(label)),
          `an image shows ${label}`,
        );
      assert.equal((html.match(/<img src="[^"]+\.svg"/g) ?? []).length, LABELS.length);
      const procs = await descendants(dev.proc.pid ?? 0);
      assert.ok(!procs.some((p) => /chrom/i.test(p)), `no browser under devutil: ${procs.join(', ')}`);
    });
});

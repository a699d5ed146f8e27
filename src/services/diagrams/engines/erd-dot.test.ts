// The erd translator: entities, keys, options and relationships become the DOT erd itself would
// hand Graphviz; mistakes name their line; hostile sources (huge, deeply nested braces, labels
// that try to close the DOT string or the HTML label, unknown cardinalities) are refused or
// escaped, never passed through. The rendered SVG is checked end to end in kroki.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiagramError } from './diagram-error.ts';
import { render } from './erd.ts';
import { erdToDot } from './erd-dot.ts';

/** The DiagramError `source` throws. */
function error(source: string): DiagramError {
  try {
    erdToDot(source);
  } catch (err) {
    assert.ok(err instanceof DiagramError, String(err));
    return err;
  }
  assert.fail('expected a DiagramError');
}

const SAMPLE = `# a comment
title {label: "Library", size: "24"}
entity {bgcolor: "#ececfc"}
[Person] {bgcolor: "#fcecec"}
*name
height {label: "cm"}
*+ "club id"
+\`birth place\`

[Location]
*id
city # a trailing comment

Person *--1 Location {label: "born in"}
Person ?--+ Person
`;

describe('erd to DOT', { timeout: 60_000 }, () => {
  it('draws entities as tables: the primary key underlined, a foreign key in italics', () => {
    const dot = erdToDot(SAMPLE);
    assert.match(dot, /^graph erd \{/);
    assert.match(dot, /<u>name<\/u>/);
    assert.match(dot, /<i><u>club id<\/u><\/i>/);
    assert.match(dot, /<i>birth place<\/i>/);
    assert.match(dot, /height \[cm\]/);
    assert.match(dot, /bgcolor="#fcecec"/, "the entity's own colour wins over the default");
    assert.match(dot, /label="Library", labelloc=t, fontsize=24/);
    assert.doesNotMatch(dot, /comment/);
  });

  it('draws relationships with the cardinality of each end', () => {
    const dot = erdToDot(SAMPLE);
    assert.match(dot, /e0 -- e1 \[taillabel="0\.\.N", headlabel="1", labeldistance=2, label="born in"\]/);
    assert.match(dot, /e0 -- e0 \[taillabel="0\.\.1", headlabel="1\.\.N"/);
  });

  it('renders through Graphviz to an SVG that shows the names', async () => {
    const svg = await render(SAMPLE);
    assert.match(svg, /<svg[\s>]/);
    for (const label of ['Person', 'club id', 'birth place', 'born in', '0..N'])
      assert.ok(svg.includes(label), label);
  });

  it('names the line of an unknown cardinality', () => {
    const e = error('[A]\n[B]\nA 1--x B');
    assert.equal(e.line, 3);
    assert.match(e.message, /unknown cardinality "x"/);
    assert.equal(error('[A]\n[B]\n\nA 11--* B').line, 4);
  });

  it('names the line of an unknown entity, a duplicate, an unknown option and unbalanced syntax', () => {
    assert.equal(error('[A]\nA 1--1 Nowhere').line, 2);
    assert.match(error('[A]\nA 1--1 Nowhere').message, /unknown entity Nowhere/);
    assert.equal(error('[A]\nx\n[A]').line, 3);
    assert.match(error('[A] {shape: "box"}').message, /unknown option shape/);
    assert.equal(error('[A\nx').line, 1);
    assert.equal(error('[A]\n"open').line, 2);
    assert.match(error('attribute before any entity').message, /line 1: expected \[Entity\]/);
    assert.match(error('# nothing but a comment').message, /no entity/);
  });

  it('refuses deeply nested braces with the line, without recursion', () => {
    const deep = `[A]\nx ${'{'.repeat(100_000)}${'}'.repeat(100_000)}`;
    const e = error(deep);
    assert.equal(e.line, 2);
    assert.ok(e.message.length < 300, 'the message quotes a little of the source, not all of it');
  });

  it('translates a huge source in one pass', () => {
    const n = 5000;
    const src = Array.from({ length: n }, (_, i) => `[E${i}]\n*id\nE${i} 1--* E${i}`).join('\n');
    const dot = erdToDot(src);
    assert.equal(dot.split('\n').filter((l) => l.includes(' -- ')).length, n);
  });

  it('escapes labels that try to end the HTML label or the DOT string', () => {
    const dot = erdToDot(
      '[A] {label: "</b></font></td></tr></table>> ]; evil [label=\\"x"}\n*"<script>alert(1)</script>"\nA 1--1 A {label: "\\"]; a -- b; #"}',
    );
    assert.doesNotMatch(dot, /<script>/);
    assert.match(dot, /&lt;script&gt;/);
    assert.match(dot, /&lt;\/table&gt;&gt; \]; evil \[label=&quot;x/);
    assert.match(dot, /label="\\"\]; a -- b; #"/);
    assert.equal(dot.split('\n').filter((l) => l.includes(' -- ')).length, 1, 'one edge only');
  });

  it('refuses option values that would reach DOT unquoted in a shape they cannot have', () => {
    assert.match(error('[A] {color: "red\\" onload=\\"x"}').message, /bad color/);
    assert.match(error('[A] {size: "1e9"}').message, /bad size/);
    assert.match(error('[A] {text-alignment: "justify"}').message, /bad text-alignment/);
    assert.match(error('[A] {font: "a<b"}').message, /bad font/);
  });
});

// The languages' samples as people meet them: the editor's picker shows each by its name, the ASCII
// box samples (ditaa, svgbob) draw closed boxes, and docs/diagrams.md's one line per language encodes
// the sample the editor shows. Pure checks on the registry and the docs; rendering is in kroki.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decodeKroki } from '../plantuml/encoding.ts';
import { LANGUAGES } from './languages.ts';

const DOCS = new URL('../../../../docs/diagrams.md', import.meta.url);

/**
 * Where an ASCII box drawing leaves a box open: a side `|` with neither `|` nor `+` above or below
 * it, or a corner `+` with no `-` beside it or no `|` above or below it. Returns "row:column" places.
 */
function openEdges(drawing: string): string[] {
  const rows = drawing.split('\n');
  const at = (r: number, c: number) => rows[r]?.[c] ?? ' ';
  const out: string[] = [];
  rows.forEach((row, r) => {
    for (let c = 0; c < row.length; c++) {
      const ch = row[c];
      const vertical = (x: string) => x === '|' || x === '+';
      if (ch === '|' && !(vertical(at(r - 1, c)) && vertical(at(r + 1, c)))) out.push(`${r}:${c}`);
      if (ch === '+') {
        const side = at(r, c - 1) === '-' || at(r, c + 1) === '-';
        const upDown = at(r - 1, c) === '|' || at(r + 1, c) === '|';
        if (!side || !upDown) out.push(`${r}:${c}`);
      }
    }
  });
  return out;
}

describe('diagram language samples', { timeout: 30_000 }, () => {
  it('finds the open box of a broken drawing (the check itself)', () => {
    assert.deepEqual(openEdges('+--+\n|  |\n+--+'), []);
    assert.deepEqual(openEdges('+--+\n|   |\n+--+'), ['0:3', '1:4', '2:3']);
  });

  for (const type of ['ditaa', 'svgbob']) {
    it(`draws closed boxes in the ${type} sample`, () => {
      const lang = LANGUAGES.find((l) => l.type === type);
      assert.ok(lang, `${type} is a language`);
      assert.deepEqual(openEdges(lang.sample), [], lang.sample);
    });
  }

  it("gives every language a human name for the editor's picker, distinct and not its bare id", () => {
    const names = LANGUAGES.map((l) => l.name);
    assert.equal(new Set(names).size, names.length, 'names are distinct');
    // nomnoml spells its own name in lower case; every other id is not what people call the language.
    for (const l of LANGUAGES) if (l.type !== 'nomnoml') assert.notEqual(l.name, l.type, l.type);
  });

  it("encodes each language's current sample in docs/diagrams.md's one-line examples", () => {
    const docs = readFileSync(DOCS, 'utf8');
    for (const l of LANGUAGES) {
      // Other examples of the language (the page's first steps) may encode other sources.
      const encoded = [...docs.matchAll(new RegExp(`/plantuml/${l.type}/\\w+/([A-Za-z0-9_-]+)`, 'g'))].map(
        (m) => decodeKroki(m[1]!, 1024 * 1024),
      );
      assert.ok(encoded.length, `docs/diagrams.md has a line for ${l.type}`);
      assert.ok(encoded.includes(l.sample), `docs/diagrams.md's ${l.type} lines: ${JSON.stringify(encoded)}`);
    }
  });
});

// The Graphviz engine module in this thread: Kroki's "unix" example (its examples page) after another
// graph traps the reused WebAssembly instance; the engine lays it out again on a fresh one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { render } from './graphviz.ts';

const UNIX = readFileSync(
  new URL('../../../../test/fixtures/kroki-samples/kroki.io/oo-graph.graphviz', import.meta.url),
  'utf8',
);

describe('Graphviz engine', { timeout: 60_000 }, () => {
  it("renders Kroki's unix example after another graph, and graphs after it", async () => {
    assert.match(await render('digraph { a -> b }', 'svg', {}), /<svg/);
    const svg = await render(UNIX, 'svg', {});
    assert.match(svg, /<svg/);
    assert.ok(svg.includes('4.3 BSD'), 'the example labels');
    assert.ok((await render('digraph { hello -> world }', 'svg', {})).includes('world'));
    assert.ok((await render(UNIX, 'svg', {})).includes('System V.3'));
  });

  it('still reports a syntax error with its line', async () => {
    await assert.rejects(render('digraph {\n a -> \n', 'svg', {}), (e: Error & { line?: number }) => {
      assert.equal(e.name, 'DiagramError');
      return true;
    });
  });
});

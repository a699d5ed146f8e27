// The Pikchr engine module in this thread: the current Pikchr (Kroki's `diamond` sample, which the
// older Pikchr of pikchr-wasm rejects with "no such variable"), its version as the registry names it,
// and syntax errors with their line.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { languageOf } from '../kroki/languages.ts';
import { render, version } from './pikchr.ts';

const DIAMOND = readFileSync(
  new URL('../../../../test/fixtures/kroki-samples/kroki/diamond.pikchr', import.meta.url),
  'utf8',
);

describe('Pikchr engine', { timeout: 60_000 }, () => {
  it("draws Kroki's diamond sample", async () => {
    const svg = await render(DIAMOND);
    assert.match(svg, /^<svg[\s>]/);
    assert.ok(svg.includes('Cardinal') && svg.includes('Points'), 'the labels');
  });

  it('is the version the registry reports (cache keys change with the build)', async () => {
    assert.equal(await version(), languageOf('pikchr')?.version);
  });

  it('reports a syntax error with its line, then renders again', async () => {
    await assert.rejects(render('box "a"\nnosuchshape'), (e: Error & { line?: number }) => {
      assert.equal(e.name, 'DiagramError');
      assert.equal(e.message, 'syntax error');
      assert.equal(e.line, 2);
      return true;
    });
    assert.ok((await render('box "again" fit')).includes('again'));
  });
});

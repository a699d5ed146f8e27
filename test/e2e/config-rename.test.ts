// The diagrams utility's settings were DEVUTIL_PLANTUML_* until it was renamed: a server started with
// an old name uses its value and says at start-up which name to use instead.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';

describe('a former DEVUTIL_PLANTUML_* setting', { timeout: 120_000 }, () => {
  let p: DevutilProcess | undefined;
  after(async () => {
    await p?.stop();
  });

  it('is used, and the start-up log names the new key', async () => {
    p = await startDevutilProcess({ DEVUTIL_PLANTUML_MAX_SOURCE_BYTES: '1KiB' });
    const line = await p.waitForLine((l) => l.includes('DEVUTIL_PLANTUML_MAX_SOURCE_BYTES'));
    assert.match(
      line,
      /DEVUTIL_PLANTUML_MAX_SOURCE_BYTES is deprecated: use DEVUTIL_DIAGRAMS_MAX_SOURCE_BYTES/,
    );
    // 1 KiB is the cap now: a longer source is refused before any engine runs, a short one is not.
    const long = await fetch(`${p.url}/plantuml/graphviz/svg`, {
      method: 'POST',
      body: `digraph { ${'a -> b; '.repeat(200)} }`,
    });
    assert.equal(long.status, 413);
    const short = await fetch(`${p.url}/plantuml/graphviz/svg`, {
      method: 'POST',
      body: 'digraph { a -> b }',
    });
    assert.equal(short.status, 200, await short.text());
  });
});

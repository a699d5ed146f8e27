// A script page keeps its bundle read from disk only until release(): the server does not hold a
// drawing library's bundle (Mermaid's is 3.5 MiB) while no browser runs.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../../test/helpers/server.ts';
import { scriptPage } from './page-kind.ts';

describe('script page files', { timeout: 30_000 }, () => {
  it('reads the script once, keeps it, and reads it again after release()', () => {
    const scriptPath = join(tempDir(), 'lib.js');
    writeFileSync(scriptPath, 'one');
    const kind = scriptPage({
      name: 'test',
      origin: 'http://devutil-test.invalid',
      html: '<!doctype html>',
      setup: 'true',
      scriptUrl: '/lib.js',
      scriptPath,
    });
    const body = () => kind.files().get('/lib.js')?.body.toString();
    assert.equal(body(), 'one');
    writeFileSync(scriptPath, 'two');
    assert.equal(body(), 'one', 'kept while a browser may load pages');
    kind.release?.();
    assert.equal(body(), 'two', 'dropped on release, read again on the next page load');
  });
});

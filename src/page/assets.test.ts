// The server's side of the page assets: it reads what the build wrote and builds nothing.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/helpers/server.ts';
import { readDist } from './assets.ts';

describe('page assets', { timeout: 10_000 }, () => {
  it('reads a built web/dist: the manifest, each file and its precompressed codings', () => {
    const dir = tempDir('devutil-dist-');
    mkdirSync(dir, { recursive: true });
    const files = { 'app.js': 'app-1.js', 'app.css': 'app-2.css', 'favicon.svg': 'favicon-3.svg' };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ sourceHash: 'x', files }));
    for (const name of Object.values(files)) writeFileSync(join(dir, name), `/* ${name} */`);
    writeFileSync(join(dir, 'app-1.js.br'), 'br');
    writeFileSync(join(dir, 'app-1.js.gz'), 'gz');
    const d = readDist(dir);
    assert.deepEqual(d.manifest.files, files);
    assert.equal(d.contents.get('app-2.css')?.toString(), '/* app-2.css */');
    assert.equal(d.codings.get('app-1.js')?.br.toString(), 'br');
    assert.equal(d.codings.has('app-2.css'), false, 'no codings written, none read');
  });

  it('without a build says how to make one instead of building', () => {
    assert.throws(() => readDist(tempDir('devutil-nodist-')), /not built.*npm run build:web/);
  });
});

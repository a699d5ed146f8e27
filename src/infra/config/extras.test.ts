// The extras table against package.json, the docs and the prune list: each extra is a development
// dependency and an optional peer dependency, its install line carries package.json's range and is the
// one docs/deployment.md prints, and the prune never deletes a file the IP lookup reads.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { EXTRAS, type ExtraName, installLine, missingMessage } from './extras.ts';

const ROOT = new URL('../../..', import.meta.url);
const { UNREAD } = (await import(new URL('scripts/extras.js', ROOT).href)) as { UNREAD: string[] };
const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as Record<
  string,
  Record<string, unknown>
>;

describe('optional extras', { timeout: 30_000 }, () => {
  it('lists each extra package as a development dependency and an optional peer dependency', () => {
    for (const e of Object.values(EXTRAS))
      for (const p of e.packages) {
        assert.ok(pkg['devDependencies']?.[p], `${p} in devDependencies`);
        assert.equal(pkg['peerDependencies']?.[p], pkg['devDependencies']?.[p], `${p}: the same range`);
        assert.deepEqual(pkg['peerDependenciesMeta']?.[p], { optional: true });
        assert.equal(pkg['dependencies']?.[p] ?? pkg['optionalDependencies']?.[p], undefined);
      }
  });

  it("names package.json's range in the install line", () => {
    assert.equal(
      installLine(['@terrastruct/d2']),
      `npm install --omit=dev --no-save --save-prod @terrastruct/d2@${String(pkg['peerDependencies']?.['@terrastruct/d2'])}`,
    );
    assert.match(
      missingMessage('d2'),
      /^D2 diagrams: the optional npm package is not installed on this server \(npm install /,
    );
  });

  it('prints the same install lines in docs/deployment.md', () => {
    const doc = readFileSync(new URL('docs/deployment.md', ROOT), 'utf8');
    for (const name of ['d2', 'vega', 'dbml', 'mermaid'] as ExtraName[])
      assert.ok(doc.includes(installLine(EXTRAS[name].packages)), name);
  });

  it('prunes no file the IP lookup reads', () => {
    const geo = readFileSync(new URL('src/services/ip/geo.ts', ROOT), 'utf8');
    for (const f of UNREAD) {
      const name = f.split('/').pop() ?? '';
      assert.ok(!geo.includes(`'${name}'`), `${name} is read by geo.ts`);
    }
    assert.ok(geo.includes("'asn-ipv4.csv'"), 'geo.ts names the files it reads');
  });
});

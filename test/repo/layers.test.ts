// Layers point down: src/infra/ is the ground floor, so none of its modules imports a utility
// (services/), the composition (server.ts, main.ts, context.ts, ops.ts) or the config schema
// (config.ts, config-sections.ts). Tests beside them may start a whole server through test helpers.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;
const INFRA = join(ROOT, 'src/infra');
const ABOVE = [/^src\/services\//, /^src\/[^/]+\.ts$/];

function modules(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) modules(p, out);
    else if (/\.[cm]?[jt]s$/.test(name) && !/\.test\.ts$/.test(name) && !name.endsWith('.d.ts')) {
      // A .js beside its .ts is the test runner's compiled copy (Node 20), not a module of its own.
      if (!(name.endsWith('.js') && existsSync(p.replace(/\.js$/, '.ts')))) out.push(p);
    }
  }
  return out;
}

/** Every relative module a file names: static and dynamic imports, re-exports, `new URL(..., import.meta.url)`. */
export function relativeImports(text: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g;
  for (const m of text.matchAll(re)) out.push(m[2] as string);
  return out;
}

describe('src/infra layering', { timeout: 30_000 }, () => {
  it('finds the imports it checks (a check that sees nothing proves nothing)', () => {
    assert.deepEqual(
      relativeImports("import { a } from '../../errors.ts';\nconst m = await import('./x.ts');"),
      ['../../errors.ts', './x.ts'],
    );
  });

  it('imports nothing from services/, the composition or the config schema', () => {
    const up: string[] = [];
    for (const file of modules(INFRA)) {
      for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
        const target = relative(ROOT, resolve(dirname(file), spec));
        if (ABOVE.some((r) => r.test(target))) up.push(`${relative(ROOT, file)} -> ${target}`);
      }
    }
    assert.deepEqual(up, [], 'src/infra/ must not import from above it');
  });
});

// The folder map in docs/architecture.md "Layout" is the tree: every folder under src/ is listed, every listed folder
// exists, and src/infra/ keeps no module at its top level (mechanisms live in folders by role).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The folders the Layout block names, as repository-relative paths ending in '/'. */
export function layoutFolders(page: string): string[] {
  const section = page.split(/^## Layout$/m)[1]?.split(/^## /m)[0];
  const block = section?.split('```')[1];
  if (!block) throw new Error('docs/architecture.md has no "## Layout" section with a code block');
  const stack: { indent: number; path: string }[] = [];
  const out: string[] = [];
  for (const line of block.split('\n')) {
    if (!line.trim()) continue;
    const indent = line.length - line.trimStart().length;
    const names = line.trim().split(/\s{2,}/)[0] ?? '';
    while (stack.length && (stack.at(-1)?.indent ?? 0) >= indent) stack.pop();
    const parent = stack.at(-1)?.path ?? '';
    const folders = names.split(/[\s,]+/).filter((t) => t.endsWith('/'));
    for (const f of folders) out.push(parent + f);
    if (folders.length === 1) stack.push({ indent, path: parent + folders[0] });
  }
  return out;
}

function foldersUnder(dir: string, rel: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      out.push(`${rel}${name}/`);
      foldersUnder(p, `${rel}${name}/`, out);
    }
  }
  return out;
}

describe('docs/architecture.md Layout', () => {
  const listed = layoutFolders(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));

  it('names only folders that exist', () => {
    const gone = listed.filter((f) => !existsSync(join(ROOT, f)) || !statSync(join(ROOT, f)).isDirectory());
    assert.deepEqual(gone, []);
  });

  it('lists every folder under src/', () => {
    const missing = foldersUnder(join(ROOT, 'src'), 'src/', []).filter((f) => !listed.includes(f));
    assert.deepEqual(missing, [], 'add these folders to docs/architecture.md "Layout"');
  });

  it('leaves no module at the top level of src/infra/', () => {
    const modules = readdirSync(join(ROOT, 'src/infra')).filter(
      (n) => /\.[cm]?[jt]s$/.test(n) && n !== 'index.ts',
    );
    assert.deepEqual(modules, []);
  });

  it('reads nested and multi-folder lines of the map', () => {
    const sample = '## Layout\n```\nsrc/\n  a/  x\n    b/ c/\n  d/\nweb/src/  y\n```\n## Next';
    assert.deepEqual(layoutFolders(sample), ['src/', 'src/a/', 'src/a/b/', 'src/a/c/', 'src/d/', 'web/src/']);
  });
});

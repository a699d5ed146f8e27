// The test runner's compiled copy of the tree for a runtime that cannot strip types (Node 20): every
// .ts file compiled once per run by esbuild, so that each test file and the servers and children it
// starts run plain JavaScript with `node`, not each one loading tsx and compiling the same modules
// again (tsx cost a test file ~0.4 CPU-s to load and ~0.4 more to compile what a server test imports).
//
// The copy has the tree's layout: beside each compiled x.js the x.ts itself (a symbolic link, for
// tests that read sources as text); JavaScript files are copied, not linked, since Node resolves a
// linked module to its real path and its relative imports would leave the copy; everything else is
// linked (a directory with no .ts below it, node_modules, .git and the test output, whole). In every
// .ts and .js file a quoted relative name ending in .ts ('./x.ts', '../a/b.ts', `./${name}.ts`) is
// renamed to .js: imports, and also entry points of workers and children (new URL('./x.ts', ...)).
// A name built any other way (join(ROOT, 'a/b.ts')) still names the .ts file. MARKER at the copy's
// root tells scripts/ts-loader.js (no TS_EXEC_ARGV), bin/devutil.js and the render processes that no
// loader is needed. git sees the copy as its work tree: its .gitignore lists the compiled files and
// the linked directories, so `git ls-files --cached --others` lists what the checkout's would (but
// for new files in a linked directory).
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

/** File at the root of a compiled copy. */
export const MARKER = '.devutil-compiled';
/** Linked whole at the root, never walked. */
const LINKED = new Set(['node_modules', '.git', 'test-output']);
const TS_NAME = /(\\?["'`])(\.{1,2}\/[^"'`\\\n]*?)\.ts\1/g;

/** `code` with its quoted relative .ts names renamed to .js. */
export function renameTs(code) {
  return code.replace(TS_NAME, '$1$2.js$1');
}

/** The tree under `dir`: { files, dirs, hasCode } with paths relative to `root`. */
function scan(root, dir) {
  const node = { rel: relative(root, dir), files: [], dirs: [], hasCode: false };
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (dir === root && LINKED.has(e.name)) node.files.push({ rel: e.name, kind: 'link' });
    else if (e.isDirectory()) {
      const sub = scan(root, p);
      node.dirs.push(sub);
      node.hasCode ||= sub.hasCode;
    } else {
      const rel = relative(root, p);
      const ts = e.name.endsWith('.ts') && !e.name.endsWith('.d.ts');
      node.hasCode ||= ts || /\.[cm]?js$/.test(e.name);
      node.files.push({ rel, kind: ts ? 'ts' : /\.[cm]?js$/.test(e.name) ? 'js' : 'link' });
    }
  }
  return node;
}

/**
 * Builds the compiled copy of `root` at `out` (removed first). Returns the number of .ts files
 * compiled. Throws with esbuild's message when a file does not compile.
 */
export function buildCompiled(root, out) {
  rmSync(out, { recursive: true, force: true });
  const tree = scan(root, root);
  const ts = [];
  const js = [];
  // git sees a linked directory as one untracked file, never as the directory it tracks files in.
  const linkedDirs = [...LINKED];
  const lay = (node) => {
    mkdirSync(join(out, node.rel), { recursive: true });
    for (const f of node.files) {
      if (f.kind === 'js') js.push(f.rel);
      else symlinkSync(join(root, f.rel), join(out, f.rel));
      if (f.kind === 'ts') ts.push(f.rel);
    }
    for (const d of node.dirs) {
      if (d.hasCode) lay(d);
      else {
        symlinkSync(join(root, d.rel), join(out, d.rel));
        linkedDirs.push(d.rel);
      }
    }
  };
  lay(tree);
  for (const f of js) writeFileSync(join(out, f), renameTs(readFileSync(join(root, f), 'utf8')));
  const result = buildSync({
    absWorkingDir: root,
    entryPoints: ts,
    outbase: root,
    outdir: out,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    // Beside each file, read only under --enable-source-maps (NODE_OPTIONS): stacks then name the
    // .ts lines. The renaming keeps lengths, so the maps stay true.
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'silent',
  });
  for (const o of result.outputFiles)
    writeFileSync(o.path, o.path.endsWith('.map') ? o.text : renameTs(o.text));
  const compiled = ts.flatMap((f) => [`/${f.slice(0, -3)}.js`, `/${f.slice(0, -3)}.js.map`]);
  let ignore = '';
  try {
    ignore = readFileSync(join(root, '.gitignore'), 'utf8');
  } catch {
    /* none */
  }
  rmSync(join(out, '.gitignore'), { force: true });
  writeFileSync(
    join(out, '.gitignore'),
    `${ignore}\n/${MARKER}\n${[...linkedDirs.map((d) => `/${d}`), ...compiled].join('\n')}\n`,
  );
  writeFileSync(join(out, MARKER), `compiled from ${root} by scripts/test-compile.js\n`);
  return ts.length;
}

// `node scripts/test-compile.js ROOT OUT`, as scripts/test.js runs it: a process of its own, with
// esbuild run synchronously (ESBUILD_WORKER_THREADS=0), so that the runner reaps it and esbuild
// whole and reads their CPU, not charging it to the first test file that ends.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [root, out] = process.argv.slice(2);
  if (!root || !out) {
    process.stderr.write('usage: node scripts/test-compile.js ROOT OUT\n');
    process.exit(2);
  }
  try {
    process.stdout.write(`${buildCompiled(root, out)}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}

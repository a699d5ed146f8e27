// Builds the home page's script and stylesheet with esbuild into content-hashed files. Used by
// `npm install` (the `prepare` script writes web/dist/) and by the server at start-up when web/dist/
// is missing or was built from other sources, so `npm install && npm start` is always enough.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { precompress } from '../src/page/encoding.ts';

export const WEB_DIR = fileURLToPath(new URL('.', import.meta.url));
export const SRC_DIR = join(WEB_DIR, 'src');
export const DIST_DIR = join(WEB_DIR, 'dist');
const ROOT = join(WEB_DIR, '..');
/**
 * Framework-free server modules the page bundles too (one copy of the logic). They are part of the
 * source hash, and the build refuses any other import from outside web/src, so a change to what the
 * page runs always means a rebuild. Type-only imports (`import type`, e.g. the admin page's answer
 * shape from src/services/admin/stats.ts) are erased and bundle nothing.
 */
export const SHARED_SOURCES = ['src/services/plantuml/text-encoder.ts'].map((p) => join(ROOT, p));

/** Logical asset name -> hashed file name, plus the hash of the sources it was built from. */
export interface Manifest {
  sourceHash: string;
  files: { 'app.js': string; 'app.css': string; 'favicon.svg': string };
}

export interface Built {
  manifest: Manifest;
  /** Hashed file name -> content. */
  contents: Map<string, Buffer>;
}

function listSources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listSources(p, out);
    else if (!e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

/** A hash over every source file's name and bytes: a changed source means a stale web/dist. */
export function sourceHash(): string {
  const h = createHash('sha256');
  for (const p of [...listSources(SRC_DIR), ...SHARED_SOURCES])
    h.update(relative(WEB_DIR, p)).update('\0').update(readFileSync(p));
  return h.digest('hex').slice(0, 16);
}

const short = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 10);

export async function buildAssets(): Promise<Built> {
  // Imported lazily: a server started from an up-to-date web/dist never loads esbuild.
  const esbuild = await import('esbuild');
  const hash = sourceHash();
  const result = await esbuild.build({
    entryPoints: { app: join(SRC_DIR, 'main.ts') },
    bundle: true,
    format: 'esm',
    target: ['es2022', 'chrome100', 'firefox100', 'safari15'],
    minify: true,
    sourcemap: false,
    write: false,
    outdir: 'out',
    absWorkingDir: ROOT,
    metafile: true,
    logLevel: 'silent',
  });
  const outside = Object.keys(result.metafile.inputs)
    .map((p) => join(ROOT, p))
    .filter((p) => !p.startsWith(SRC_DIR + sep) && !SHARED_SOURCES.includes(p));
  if (outside.length)
    throw new Error(`the page imports ${outside.join(', ')}: add it to SHARED_SOURCES in web/build.ts`);
  const css = await esbuild.build({
    entryPoints: { app: join(SRC_DIR, 'style.css') },
    bundle: true,
    minify: true,
    write: false,
    outdir: 'out',
    logLevel: 'silent',
  });
  const js = Buffer.from(result.outputFiles.find((f) => f.path.endsWith('.js'))?.contents ?? []);
  const cssOut = Buffer.from(css.outputFiles.find((f) => f.path.endsWith('.css'))?.contents ?? []);
  const icon = readFileSync(join(SRC_DIR, 'favicon.svg'));
  const files = {
    'app.js': `app-${short(js)}.js`,
    'app.css': `app-${short(cssOut)}.css`,
    'favicon.svg': `favicon-${short(icon)}.svg`,
  };
  const contents = new Map<string, Buffer>([
    [files['app.js'], js],
    [files['app.css'], cssOut],
    [files['favicon.svg'], icon],
  ]);
  return { manifest: { sourceHash: hash, files }, contents };
}

/**
 * Writes a build to web/dist/ (replacing what was there), with each asset's .br and .gz beside it, so
 * a server starting from web/dist/ compresses nothing (it was ~150 ms of every start-up).
 */
export function writeDist(built: Built, dir = DIST_DIR): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [name, body] of built.contents) {
    writeFileSync(join(dir, name), body);
    const coded = precompress(body);
    writeFileSync(join(dir, `${name}.br`), coded.br);
    writeFileSync(join(dir, `${name}.gz`), coded.gzip);
  }
  writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify(built.manifest, null, 2)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildAssets();
  writeDist(built);
  const sizes = [...built.contents].map(([n, b]) => `${n} ${b.length}B`).join(', ');
  process.stdout.write(`web: built ${sizes}\n`);
}

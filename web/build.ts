// Builds the home page's script and stylesheet with esbuild (a development dependency) into
// content-hashed files in web/dist/ (dist.ts): run by `npm install` in a development install (the
// `prepare` step, scripts/prepare.js), by `npm run build:web`, and in the build stage of an image.
// The server never builds: a production install (`npm ci --omit=dev`) has no bundler.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { precompress } from '../src/page/encoding.ts';
import { vendorBundles } from '../src/services/diagrams/engines/bundles.ts';
import { DIST_DIR, type Manifest, ROOT, SHARED_SOURCES, SRC_DIR, sourceHash } from './dist.ts';

export type { Manifest };

export interface Built {
  manifest: Manifest;
  /** Hashed file name -> content. */
  contents: Map<string, Buffer>;
}

const short = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 10);

export async function buildAssets(): Promise<Built> {
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
    throw new Error(`the page imports ${outside.join(', ')}: add it to SHARED_SOURCES in web/dist.ts`);
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
  // The browser pools' page scripts, taken here from their packages, which a production install leaves out.
  vendorBundles(join(dir, 'vendor'));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildAssets();
  writeDist(built);
  const sizes = [...built.contents].map(([n, b]) => `${n} ${b.length}B`).join(', ');
  process.stdout.write(`web: built ${sizes}\n`);
}

// What web/dist/ holds: the page's content-hashed assets and a manifest naming them with the hash
// of the sources they were built from. The server reads it (src/page/assets.ts) and never builds;
// web/build.ts writes it, in a development install (`npm install` runs it) or in the build stage of
// an image, before the production install.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WEB_DIR = fileURLToPath(new URL('.', import.meta.url));
export const SRC_DIR = join(WEB_DIR, 'src');
export const DIST_DIR = join(WEB_DIR, 'dist');
export const ROOT = join(WEB_DIR, '..');
/**
 * Framework-free server modules the page bundles too (one copy of the logic). They are part of the
 * source hash, and the build refuses any other import from outside web/src, so a change to what the
 * page runs always means a rebuild. Type-only imports (`import type`, e.g. the admin page's answer
 * shape from src/services/admin/stats.ts) are erased and bundle nothing.
 */
export const SHARED_SOURCES = ['src/services/diagrams/text-encoder.ts', 'src/infra/config/bytes.ts'].map(
  (p) => join(ROOT, p),
);

/** Logical asset name -> hashed file name, plus the hash of the sources it was built from. */
export interface Manifest {
  sourceHash: string;
  files: { 'app.js': string; 'app.css': string; 'favicon.svg': string };
}

function listSources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listSources(p, out);
    // A .js (and its map) beside its .ts is the test runner's compiled copy of the tree on Node 20
    // (scripts/test-compile.js), not a source of the page.
    else if (/\.js(\.map)?$/.test(e.name) && existsSync(p.replace(/\.js(\.map)?$/, '.ts'))) continue;
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

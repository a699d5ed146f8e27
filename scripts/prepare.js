#!/usr/bin/env node
// `npm install`'s prepare step. A development install has the bundler (esbuild, a development
// dependency): it builds the page's assets into web/dist/ (web/build.ts). A production install
// (`npm ci --omit=dev`) has none and uses the web/dist/ built before it (deploy/Dockerfile's build
// stage); without one it says how to get it and the install goes on (the server then serves the
// page without its script and style, and logs the same advice). Either way it first drops the
// tables of installed extras the server never reads (scripts/extras.js prune).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { prune } from './extras.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// The IP databases' duplicate tables, where they are installed (scripts/extras.js).
prune(root);
let bundler = true;
try {
  createRequire(import.meta.url).resolve('esbuild');
} catch {
  bundler = false;
}
if (bundler) {
  const r = spawnSync(process.execPath, ['scripts/run-ts.js', 'web/build.ts'], {
    cwd: root,
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}
if (existsSync(`${root}web/dist/manifest.json`)) {
  process.stdout.write('web: using the page assets in web/dist/ (built before this production install)\n');
} else {
  process.stderr.write(
    'web: the page assets (web/dist/) are not built and this install has no bundler (--omit=dev).\n' +
      '     Build them where the development dependencies are installed (`npm ci && npm run build:web`,\n' +
      '     as deploy/Dockerfile does in its build stage), or the page is served without script and style.\n',
  );
}

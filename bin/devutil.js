#!/usr/bin/env node
// The devutil command. Node >= 22.18 (24, 26) runs the TypeScript sources itself by stripping
// types, so nothing else is loaded; older runtimes (Node 20) register tsx first, a development
// dependency: on Node 20 install with `npm ci` or `npm install`, not with --omit=dev. The test
// runner's compiled copy of the tree (scripts/test-compile.js, marked by .devutil-compiled) is
// plain JavaScript and needs no loader.
import { existsSync } from 'node:fs';
import module from 'node:module';

// V8's code cache (and on Node 24/26 the type-stripped sources) kept between starts: start-up
// parses and strips less. In the OS temp directory unless NODE_COMPILE_CACHE names another; a
// read-only or missing directory only turns it off.
module.enableCompileCache?.();
if (!process.features.typescript && !existsSync(new URL('../.devutil-compiled', import.meta.url))) {
  try {
    const { register } = await import('tsx/esm/api');
    register();
  } catch {
    process.stderr.write(
      `devutil: Node ${process.version} cannot run TypeScript by itself and tsx is not installed.\n` +
        'Use Node 24 or 26, or install with the development dependencies (`npm ci` or `npm install`,\n' +
        'not --omit=dev): they include tsx, the loader Node 20 needs.\n',
    );
    process.exit(1);
  }
}
const { main } = await import('../src/cli.ts');
const code = await main(process.argv.slice(2));
// Exit explicitly: a cluster worker's IPC channel (or a reconnecting client) would otherwise keep
// the process alive after a clean shutdown.
process.exit(code);

#!/usr/bin/env node
// `node scripts/run-ts.js FILE.ts [ARGS...]`: runs one TypeScript entry point (web build, benches,
// config reference) natively where Node strips types (22.18+, 24, 26), else through tsx (Node 20).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TS_EXEC_ARGV } from './ts-loader.js';

const [file, ...rest] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node scripts/run-ts.js FILE.ts [ARGS...]\n');
  process.exit(2);
}
if (TS_EXEC_ARGV.length) {
  const { register } = await import('tsx/esm/api');
  register();
}
// The entry point sees itself as argv[1], as if it had been run directly.
const abs = resolve(file);
process.argv = [process.argv[0] ?? 'node', abs, ...rest];
await import(pathToFileURL(abs).href);

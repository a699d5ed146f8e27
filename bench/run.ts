// `npm run bench [-- NAME...]`: runs bench/<NAME>.ts for each name (default: every benchmark).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';

const dir = new URL('.', import.meta.url).pathname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run.ts'].includes(f))
  .map((f) => f.slice(0, -3))
  .sort();
const names = process.argv.slice(2).length ? process.argv.slice(2) : all;
let failed = 0;
for (const n of names) {
  if (!all.includes(n)) {
    console.error(`no benchmark ${n}; have: ${all.join(', ')}`);
    failed++;
    continue;
  }
  console.log(`\n##### bench/${n}.ts`);
  const r = spawnSync(process.execPath, [...TS_EXEC_ARGV, join(dir, `${n}.ts`)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);

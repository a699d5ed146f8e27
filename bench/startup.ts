// Start-up: from `node bin/devutil.js serve` (what the Docker image runs) and from `npm start` to the
// first answered request, against a bare node:http server started the same way (the runtime's
// floor). Median of BENCH_RUNS restarts (default 7) on one data directory, after one start that is
// not counted (it creates the relay identity and fills Node's compile cache, as a first start does).
import { BARE_SERVER, header, report, startupMedian } from './lib.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 7);
const median = (cmd: string, args: string[], devutil = true) =>
  startupMedian(cmd, args, { cwd: ROOT, runs: RUNS, devutil });

header('start-up to the first answered request');
const bare = await median(process.execPath, ['-e', BARE_SERVER], false);
const direct = await median(process.execPath, ['bin/devutil.js', 'serve']);
const npmStart = await median('npm', ['start', '--silent']);
report('start-up', 'bare node:http', [
  { metric: 'node bin/devutil.js serve', devutil: direct, anchor: bare, unit: 'ms', higherIsBetter: false },
  { metric: 'npm start', devutil: npmStart, anchor: bare, unit: 'ms', higherIsBetter: false },
]);
// The aim (issue 35) is for devutil's own start; npm's start-up (reading package.json, spawning a
// shell) is npm's and is shown apart.
console.log(
  `\nnode bin/devutil.js serve -> first answer: ${direct.toFixed(0)} ms (aim: under 500 ms on Node 26); ` +
    `npm start adds ${(npmStart - direct).toFixed(0)} ms of its own; median of ${RUNS}`,
);

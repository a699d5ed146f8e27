// Start-up: from `npm start` (and from `node bin/devutil.js serve`, what the Docker image runs) to the
// first answered request, against a bare node:http server started the same way (the runtime's
// floor). Median of BENCH_RUNS restarts (default 7) on one data directory, after one start that is
// not counted (it creates the relay identity and fills Node's compile cache, as a first start does).
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { freePort } from '../test/helpers/ports.ts';
import { tempDir } from '../test/helpers/server.ts';
import { header, report } from './lib.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 7);
const BARE = `require('node:http').createServer((q, s) => s.end('{"ip":"127.0.0.1"}')).listen(+process.env.DEVUTIL_PORT, '127.0.0.1')`;

function answered(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/rest/api/v1/ip' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function once(cmd: string, args: string[], dataDir: string): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const child: ChildProcess = spawn(cmd, args, {
    cwd: ROOT,
    stdio: 'ignore',
    // Its own process group, stopped as a whole: SIGTERM to `npm start` alone left the server it
    // started (and the server's PlantUML JVM) running after every round.
    detached: true,
    env: {
      ...process.env,
      PATH: `${process.execPath.replace(/\/node$/, '')}:${process.env['PATH'] ?? ''}`,
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_DATA_DIR: dataDir,
      DEVUTIL_RELAY_PORT: String(await freePort()),
      DEVUTIL_RELAY_STATUS_PORT: '0',
      DEVUTIL_LOG_LEVEL: 'warn',
    },
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited ${child.exitCode}`);
      if (await answered(port)) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    const exited = child.exitCode === null ? new Promise((r) => child.once('exit', r)) : null;
    try {
      process.kill(-(child.pid as number), 'SIGTERM');
    } catch {
      // the whole group has exited already
    }
    await exited;
  }
}

async function median(cmd: string, args: string[]): Promise<number> {
  const dataDir = tempDir('devutil-bench-start-');
  const first = await once(cmd, args, dataDir);
  console.log(`${[cmd, ...args].join(' ').slice(-40)}: first start ${first.toFixed(0)} ms (not counted)`);
  const all: number[] = [];
  for (let i = 0; i < RUNS; i++) all.push(await once(cmd, args, dataDir));
  all.sort((a, b) => a - b);
  return all[Math.floor(all.length / 2)]!;
}

header('start-up to the first answered request');
const bare = await median(process.execPath, ['-e', BARE]);
const direct = await median(process.execPath, ['bin/devutil.js', 'serve']);
const npmStart = await median('npm', ['start', '--silent']);
report('start-up', 'bare node:http', [
  { metric: 'node bin/devutil.js serve', devutil: direct, anchor: bare, unit: 'ms', higherIsBetter: false },
  { metric: 'npm start', devutil: npmStart, anchor: bare, unit: 'ms', higherIsBetter: false },
]);
console.log(
  `\nnpm start -> first answer: ${npmStart.toFixed(0)} ms (aim: under 800 ms on Node 26); median of ${RUNS}`,
);

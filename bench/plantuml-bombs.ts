// What a client whose diagrams run past the render timeout costs everyone else (issue 24: "a render
// that times out costs other clients less than 2x their p99"). Victims (wrk from 127.0.0.1, every
// request a new corpus diagram) are measured alone, then while an attacker (curl from 127.0.0.2)
// re-sends a layout that runs for minutes; the anchor is the victims' own p99 alone. Variants:
// devutil as configured (quarantine on), and with DEVUTIL_DIAGRAMS_QUARANTINE_SEC=0 (every timeout
// abandoned on the main JVM). The pool's events during the attack (JVM starts, timeouts) are printed.
//   BENCH_SECONDS (30: each phase; longer than the render timeout), BENCH_PLANTUML_TIMEOUT_MS
//   (10000, the default timeout), BENCH_CONNECTIONS (4: victims), BENCH_ATTACKERS (2)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runaway } from '../test/fixtures/plantuml/bombs.ts';
import {
  header,
  invalid,
  report,
  requireCommand,
  startDevutil,
  type WrkResult,
  wrk,
  wrkThreads,
} from './lib.ts';
import { events, load, removeScratch, status, uniquePaths, walker } from './plantuml-lib.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 30);
const TIMEOUT_MS = Number(process.env['BENCH_PLANTUML_TIMEOUT_MS'] ?? 10_000);
const C = Number(process.env['BENCH_CONNECTIONS'] ?? 4);
const ATTACKERS = Number(process.env['BENCH_ATTACKERS'] ?? 2);
requireCommand('curl');

header(
  `PlantUML victims' p99 alone and beside a client re-sending a diagram that times out (${TIMEOUT_MS} ms)`,
);
const scratch = mkdtempSync(join(tmpdir(), 'devutil-bench-bombs-'));
const bombFile = join(scratch, 'runaway.puml');
writeFileSync(bombFile, runaway(false, 'bench'));
const statusFile = join(scratch, 'statuses');
const dataDir = join(scratch, 'data');

/** `n` curl loops from 127.0.0.2, each re-sending the runaway diagram; statuses appended to a file. */
function attack(url: string, n: number): ChildProcess {
  const loop =
    `while :; do curl -s -o /dev/null -w '%{http_code}\\n' --interface 127.0.0.2 --max-time 120 ` +
    `-H 'content-type: text/plain' --data-binary @'${bombFile}' '${url}/plantuml/svg' >> '${statusFile}'; done`;
  const script = Array.from({ length: n }, () => `(${loop}) &`).join('\n') + '\nwait';
  return spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
}

/** Until a diagram never asked for before answers 200 from `url`. */
async function firstDiagram(url: string): Promise<void> {
  const first = uniquePaths(`first-${process.pid}-${Date.now()}`, 1)[0]!;
  for (const until = Date.now() + 300_000; (await status(url + first)) !== 200; ) {
    if (Date.now() > until) throw new Error('no diagram in 300 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

// The first server on a data directory compiles the worker and then trains the class-data archive
// in the background: done once, before anything is measured.
{
  const prime = await startDevutil({ DEVUTIL_DATA_DIR: dataDir });
  await firstDiagram(prime.url);
  const dir = join(dataDir, 'plantuml');
  const archived = () =>
    readdirSync(dir).some(
      (d) => d.startsWith('worker-') && readdirSync(join(dir, d)).some((f) => f.endsWith('.jsa')),
    );
  for (const until = Date.now() + 300_000; !archived() && Date.now() < until; )
    await new Promise((r) => setTimeout(r, 500));
  await prime.close();
  console.log(
    archived() ? 'worker compiled, class-data archive made' : 'WARNING: no class-data archive after 5 min',
  );
}

const rows: Parameters<typeof report>[2] = [];
let seq = 0;
const variants: [string, Record<string, string>][] = [
  ['quarantine on', {}],
  ['quarantine off', { DEVUTIL_DIAGRAMS_QUARANTINE_SEC: '0' }],
];
for (const [name, env] of variants) {
  const dev = await startDevutil({
    DEVUTIL_DATA_DIR: dataDir,
    DEVUTIL_DIAGRAMS_TIMEOUT_MS: String(TIMEOUT_MS),
    ...env,
  });
  try {
    const victims = (sec: number): WrkResult =>
      wrk(dev.url, {
        connections: C,
        durationSec: sec,
        script: walker(uniquePaths(`bombs-${process.pid}-${seq++}`, 20_000), wrkThreads(C)),
        timeoutSec: 60, // a victim stuck behind a JVM start is a figure, not a socket error
      });
    await firstDiagram(dev.url); // the JVM up, then its JIT warm
    victims(10);
    // Alone before and after the attack (once its abandoned renders ran out), so a machine whose
    // load drifts, or a JIT still warming, does not favour either side; the anchor is their mean.
    const fmt = (w: WrkResult) =>
      `${w.rps.toFixed(1)} req/s p50 ${w.p50ms.toFixed(0)} ms p99 ${w.p99ms.toFixed(0)} ms`;
    const loadBefore = load();
    const before = victims(SECONDS);
    writeFileSync(statusFile, '');
    const events0 = events(dev.url);
    const attacker = attack(dev.url, ATTACKERS);
    const attackLoad = load();
    const hit = victims(SECONDS);
    try {
      process.kill(-(attacker.pid ?? 0), 'SIGKILL');
    } catch {} // ended
    const events1 = events(dev.url);
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 3000));
    const loadAfter = load();
    const after = victims(SECONDS);
    const quiet = {
      rps: (before.rps + after.rps) / 2,
      p99ms: (before.p99ms + after.p99ms) / 2,
    };
    const delta = Object.entries(events1)
      .map(([k, v]) => [k, v - (events0[k] ?? 0)] as const)
      .filter(([, d]) => d > 0);
    const statuses: Record<string, number> = {};
    for (const s of readFileSync(statusFile, 'utf8').split('\n').filter(Boolean))
      statuses[s] = (statuses[s] ?? 0) + 1;
    console.log(
      `${name}:\n  alone before (load ${loadBefore}) ${fmt(before)}\n  attacked (load ${attackLoad}) ${fmt(hit)}` +
        `\n  alone after (load ${loadAfter}) ${fmt(after)}\n  attacker answers ${JSON.stringify(statuses)}; ` +
        `pool events during the attack ${JSON.stringify(Object.fromEntries(delta))}`,
    );
    const bad = invalid({ before, attacked: hit, after });
    rows.push(
      {
        metric: `victim p99, ${name}`,
        devutil: hit.p99ms,
        anchor: quiet.p99ms,
        unit: 'ms',
        higherIsBetter: false,
        ...(name === 'quarantine on' ? { target: 2 } : {}),
        invalid: bad,
      },
      {
        metric: `victim req/s, ${name}`,
        devutil: hit.rps,
        anchor: quiet.rps,
        unit: 'req/s',
        higherIsBetter: true,
        invalid: bad,
      },
    );
  } finally {
    await dev.close();
  }
}
removeScratch();
rmSync(scratch, { recursive: true, force: true });
report(`PlantUML victims (c=${C}) beside ${ATTACKERS} timing-out renders at a time`, 'alone', rows);

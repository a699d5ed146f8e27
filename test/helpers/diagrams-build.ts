// Run by scripts/test.js beside a run's first test files: compiles the PlantUML worker and makes its
// class-data archive once in the run's shared build directory (the argument), which test servers
// then reuse (server.ts, sharedDiagramsBuild) instead of each compiling and training. A head start
// only: a server that needs the worker before it is there compiles it itself, and a training run
// that another process holds the lock of is left to it (cds.ts).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { PlantumlEngine } from '../../src/services/diagrams/plantuml/engine.ts';

const buildDir = process.argv[2] ?? '';
if (!buildDir) {
  console.error('usage: diagrams-build.ts <build directory>');
  process.exit(2);
}
const dataDir = mkdtempSync(join(tmpdir(), 'devutil-diagrams-build-'));
const { config } = loadConfig({
  overrides: {
    server: { dataDir },
    diagrams: { buildDir, workers: 1, workerThreads: 1, cacheDisk: 0, quarantineSec: 0 },
  },
});
const log = pino({ level: 'info' });

function archives(): string[] {
  const root = join(buildDir, 'plantuml');
  try {
    return readdirSync(root)
      .filter((d) => d.startsWith('worker-'))
      .flatMap((d) => readdirSync(join(root, d)).filter((f) => f.endsWith('.jsa')));
  } catch {
    return [];
  }
}

const engine = new PlantumlEngine(config.diagrams, dataDir, log);
const started = Date.now();
try {
  // Compiles the worker and starts one JVM; its hello starts the training (at the lowest priority).
  await engine.prepare();
  const until = Date.now() + 10 * 60_000;
  while (archives().length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 500));
  log.info({ ms: Date.now() - started, archives: archives() }, 'diagrams build done');
} catch (err) {
  log.warn({ err }, 'diagrams build failed: test servers build their own');
} finally {
  await engine.close();
  rmSync(dataDir, { recursive: true, force: true });
}

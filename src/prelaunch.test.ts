// Prelaunched: a plugin takes its handle once and only for its own data directory; what nobody
// took is closed with the server. And `devutil serve` reaches the prelaunch having loaded the
// config schema and sections and the logger, nothing of the server (the HTTP framework, pages,
// dashboards), and spawns the worker JVM (issue 35).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startDevutilProcess } from '../test/helpers/process.ts';
import { sharedDiagramsBuild, tempDir } from '../test/helpers/server.ts';
import { toolSkip } from '../test/helpers/tools.ts';
import { Prelaunched } from './prelaunch.ts';

const RECORDER = new URL('../test/fixtures/core/record-loads.mjs', import.meta.url).pathname;
/** Node 22.15+/24/26 have synchronous module hooks, which record-loads.mjs uses. */
const HAS_HOOKS = 'registerHooks' in (await import('node:module'));

function handle() {
  const h = { closed: 0, close: () => void h.closed++ };
  return h;
}

describe('Prelaunched', { timeout: 10_000 }, () => {
  it('hands a handle to the first taker for the same data directory, once', () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    assert.equal(p.take('plantuml', '/data'), h);
    assert.equal(p.take('plantuml', '/data'), undefined);
    assert.equal(h.closed, 0);
  });

  it('closes a handle started for another data directory instead of handing it over', () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    assert.equal(p.take('plantuml', '/other'), undefined);
    assert.equal(h.closed, 1);
  });

  it('closes what nobody took', async () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    await p.close();
    assert.equal(h.closed, 1);
    assert.equal(p.take('plantuml', '/data'), undefined);
  });
});

/** `name` and every package it depends on, as installed. */
function dependencies(name: string, seen = new Set<string>()): Set<string> {
  if (seen.has(name)) return seen;
  seen.add(name);
  const pkg = JSON.parse(
    readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8'),
  );
  for (const d of Object.keys(pkg.dependencies ?? {})) dependencies(d, seen);
  return seen;
}

describe('devutil serve, up to the PlantUML prelaunch', {
  skip: !HAS_HOOKS || toolSkip('java', ['-version']),
  timeout: 240_000,
}, () => {
  it('loads the config and the logger, nothing of the server, before the prelaunch, and spawns the JVM', async () => {
    // Both starts on one build directory: the second finds the Java facts and the worker cached,
    // as every start but a machine's first does. Its record has the modules and the spawns in order.
    const log = join(tempDir(), 'loads.txt');
    const env = {
      NODE_OPTIONS: `--import=${RECORDER}`,
      DEVUTIL_LOAD_LOG_SPAWNS: '1',
      DEVUTIL_LOG_LEVEL: 'debug',
      DEVUTIL_DIAGRAMS_PRESTART: 'true',
      DEVUTIL_DIAGRAMS_CLASS_ARCHIVE: 'false',
      DEVUTIL_DIAGRAMS_BUILD_DIR: sharedDiagramsBuild(false, {}) ?? tempDir(),
    };
    const spawned = (line: string) => line.includes('"plantuml worker spawn"');
    const first = await startDevutilProcess({ ...env, DEVUTIL_LOAD_LOG: `${log}.first` });
    try {
      await first.waitForLine(spawned, 180_000);
    } finally {
      await first.stop();
    }
    const p = await startDevutilProcess({ ...env, DEVUTIL_LOAD_LOG: log });
    try {
      await p.waitForLine(spawned, 30_000);
    } finally {
      await p.stop();
    }
    const lines = readFileSync(log, 'utf8').split('\n');
    const at = (end: string) => lines.findIndex((l) => l.endsWith(end));
    const prelaunch = at('/src/prelaunch.ts');
    assert.ok(prelaunch > 0, 'the start did not reach the prelaunch');
    const before = lines.slice(0, prelaunch).filter((l) => /^(file|node):/.test(l));
    assert.ok(
      before.some((u) => u.endsWith('/src/services/diagrams/config.ts')),
      'the record covers the config',
    );
    const server = before.filter((u) =>
      /\/src\/(main|server|context)\.ts$|\/src\/infra\/http\/errors\.ts$|\/src\/services\/[^/]+\/(index|page|dashboard)\.ts$/.test(
        u,
      ),
    );
    assert.deepEqual(server, [], 'server modules loaded before the PlantUML prelaunch');
    // Packages: the logger's alone (pino and what it depends on), the one the prelaunch is given.
    const logger = dependencies('pino');
    const packages = new Set(
      before.flatMap((u) => /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? []),
    );
    assert.deepEqual(
      [...packages].filter((n) => !logger.has(n)),
      [],
      'packages other than the logger loaded before the PlantUML prelaunch',
    );
    const spawn = lines.findIndex((l) => l.startsWith('spawn ') && l.endsWith(' DevutilPlantumlWorker'));
    assert.ok(spawn > 0, 'the record has no spawn of the worker JVM');
  });
});

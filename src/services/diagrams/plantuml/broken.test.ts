// A JVM whose class state broke (a render failed with a LinkageError) is killed and the render tried
// again on a fresh JVM; a diagram that breaks the fresh one too gets a 422 and its client the
// quarantine's strikes. Real JVMs: a copy of the engine's jar missing two classes breaks them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { brokenJar, MINDMAP, SALT } from '../../../../test/fixtures/plantuml/broken-jar.ts';
import { buildTestServer, sharedDiagramsBuild, tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { buildWorker, defaultJar, detectJavaCached } from './java.ts';
import { type PoolEvent, WorkerPool } from './pool.ts';
import { JavaWorker, type WorkerOptions } from './worker.ts';

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('PlantUML JVMs with a broken class state', {
  skip: toolSkip('java', ['-version']),
  timeout: 300_000,
}, () => {
  const buildDir = sharedDiagramsBuild(false, {}) ?? tempDir();
  let base: WorkerOptions;
  let broken: string;
  const pools: WorkerPool[] = [];
  before(async () => {
    const info = await detectJavaCached('java', buildDir);
    assert.ok(info.ok, info.reason);
    const jar = defaultJar();
    broken = brokenJar(jar, tempDir());
    base = {
      java: 'java',
      jar,
      // Compiled against the whole jar: the worker itself uses neither missing class.
      classDir: await buildWorker(info, jar, buildDir),
      heapBytes: 256 * 1024 ** 2,
      profile: 'INTERNET',
      urlAllowlist: [],
      limitSize: 4096,
      threads: 1,
    };
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  /** A pool of one JVM; `jarOf(n)` is the jar of its n-th JVM (0 first). */
  function pool(jarOf: (n: number) => string, guard?: { brokenWindowMs: number; maxBroken: number }) {
    const events: [PoolEvent, Record<string, unknown>][] = [];
    let n = 0;
    const p = new WorkerPool({
      size: 1,
      threads: 1,
      timeoutMs: 120_000,
      ...guard,
      spawn: () => new JavaWorker({ ...base, jar: jarOf(n++) }),
      onEvent: (e, d) => events.push([e, d]),
    });
    pools.push(p);
    const of = (e: PoolEvent) => events.filter(([x]) => x === e).map(([, d]) => d);
    return { p, events, of };
  }

  for (const [what, source, label] of [
    ['while exporting (the engine draws a crash report)', SALT, /OK/],
    ['while parsing (the engine makes an error diagram of it)', MINDMAP, /branch/],
  ] as const) {
    it(`kills a JVM whose render failed with a LinkageError ${what}, and renders the diagram again on a fresh JVM`, async () => {
      const { p, events, of } = pool((n) => (n === 0 ? broken : base.jar));
      const r = await p.run({ op: 'render', format: 'txt', source });
      assert.equal(r.status, 'ok', `${r.status} ${r.exception} ${JSON.stringify(events)}`);
      assert.match(r.body.toString('utf8'), label);
      const reported = of('broken');
      assert.equal(reported.length, 1, JSON.stringify(events));
      assert.equal(reported[0]!['killed'], true);
      assert.match(String(reported[0]!['exception']), /^java\.lang\.NoClassDefFoundError: /);
      const [first, second] = of('spawn').map((d) => d['pid'] as number);
      assert.ok(first && second && first !== second, JSON.stringify(events));
      assert.equal(reported[0]!['pid'], first);
      await waitFor(() => gone(first), 'the broken JVM to be gone', 10_000);
    });
  }

  it("does not take a diagram's own text naming a LinkageError for a broken JVM", async () => {
    const { p, events, of } = pool(() => base.jar);
    const source =
      '@startuml\n!assert 1 == 2 : "java.lang.NoClassDefFoundError: Could not initialize class X"\n@enduml';
    const r = await p.run({ op: 'render', format: 'txt', source });
    assert.equal(r.status, 'error', `${r.status} ${r.exception}`);
    assert.match(JSON.stringify(r.errors), /NoClassDefFoundError/, 'the engine quotes the text');
    assert.equal(r.broken, undefined);
    assert.deepEqual(of('broken'), [], JSON.stringify(events));
  });

  it('names where an exception was thrown: the first frames of its innermost cause', async () => {
    const { p } = pool(() => base.jar);
    // An op the worker does not know: its request handler throws, outside the engine.
    const r = await p.run({ op: 'unknown-op' as 'render', source: 'A -> B' });
    assert.equal(r.status, 'exception');
    assert.equal(r.exception, 'java.lang.IllegalArgumentException: unknown op unknown-op');
    assert.match(
      String(r.at),
      /^DevutilPlantumlWorker\.handle:\d+ < DevutilPlantumlWorker\$Renders\.loop:\d+/,
    );
    assert.equal(r.broken, undefined);
  });

  it('kills at most maxBroken JVMs a window: a diagram that breaks every JVM does not restart them in a loop', async () => {
    // One kill a window (the default is three, the same path with two more JVM starts), and a window
    // longer than a busy machine takes to start the JVMs.
    const { p, events, of } = pool(() => broken, { brokenWindowMs: 30 * 60_000, maxBroken: 1 });
    const first = await p.run({ op: 'render', format: 'txt', source: SALT });
    // Tried once more, on a fresh JVM that broke too and is kept (no kill left): answered as broken.
    assert.equal(first.status, 'exception');
    assert.match(first.broken ?? '', /NoClassDefFoundError/);
    assert.equal(of('spawn').length, 2, JSON.stringify(events));
    const second = await p.run({ op: 'render', format: 'txt', source: SALT });
    assert.match(second.broken ?? '', /NoClassDefFoundError/);
    assert.deepEqual(
      of('broken').map((d) => d['killed']),
      [true, false],
      JSON.stringify(events),
    );
    // The second JVM was kept: it serves what does not need the broken class, and no third started.
    const other = await p.run({ op: 'render', format: 'txt', source: 'A -> B : still served' });
    assert.equal(other.status, 'ok');
    assert.match(other.body.toString('utf8'), /still served/);
    assert.equal(of('spawn').length, 2, JSON.stringify(events));
  });

  describe('through the route', () => {
    let app: FastifyInstance;
    before(async () => {
      app = await buildTestServer({
        overrides: {
          diagrams: {
            jar: broken,
            buildDir,
            classArchive: false,
            workers: 1,
            workerThreads: 1,
            timeoutMs: 60_000,
            quarantineSec: 600,
          },
        },
      });
    });
    after(async () => {
      await app?.close();
    });

    const post = (payload: string, remoteAddress: string) =>
      app.inject({
        method: 'POST',
        url: '/plantuml/txt',
        payload,
        remoteAddress,
        headers: { 'content-type': 'text/plain' },
      });
    /** devutil_plantuml_worker_events_total{event="broken"} of one pool. */
    const brokenEvents = async (pool: 'main' | 'quarantine'): Promise<number> => {
      const text = (await app.inject({ url: '/metrics' })).body;
      const m = new RegExp(
        `^devutil_plantuml_worker_events_total\\{[^}]*event="broken"[^}]*pool="${pool}"[^}]*\\} (\\d+)`,
        'm',
      ).exec(text);
      return Number(m?.[1] ?? 0);
    };

    it('answers 422 ENGINE_BROKEN for a diagram that breaks a fresh JVM too, and renders it in quarantine after', async () => {
      const up = await post('A -> B : up', '198.51.100.7');
      assert.equal(up.statusCode, 200, up.body.slice(0, 200));
      const r = await post(SALT, '198.51.100.8');
      assert.equal(r.statusCode, 422, r.body.slice(0, 300));
      assert.match(r.headers['content-type'] as string, /^text\/plain/);
      assert.match(r.body, /failed to load or initialize one of its classes/);
      assert.doesNotMatch(r.body, /\bat [\w.$]+\(/, 'no stack trace');
      assert.equal(await brokenEvents('main'), 2);
      // The diagram is a suspect now: sent again, it breaks the quarantine's JVMs, not the main pool's.
      const again = await post(SALT, '198.51.100.8');
      assert.equal(again.statusCode, 422, again.body.slice(0, 300));
      assert.equal(await brokenEvents('main'), 2);
      assert.equal(await brokenEvents('quarantine'), 2);
      // Someone else's diagram is served by the main pool meanwhile.
      const other = await post('A -> B : someone else', '198.51.100.7');
      assert.equal(other.statusCode, 200, other.body.slice(0, 200));
      assert.match(other.body, /someone else/);
    });
  });
});

// Timeouts, killed workers and a full queue do not take the service down. One small pool (one
// worker, a short timeout) for the whole file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type IncludeServer, startIncludeServer } from '../../../test/fixtures/plantuml/include-server.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';

/** PIDs of this test process's PlantUML worker JVMs (not the class-data archive's training run). */
function workerPids(): number[] {
  const r = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => l.includes('DevutilPlantumlWorker') && !l.includes('-Ddevutil.train'))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return cond();
}

/**
 * A 144-class diagram with random links: its layout runs for minutes (docs/protocols/plantuml-server.md
 * §11).
 */
function pathological(): string {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 48271) % 2147483647; // Park-Miller: exact in doubles, so a real random graph
    return seed % n;
  };
  const lines = ['@startuml'];
  for (let i = 0; i < 144; i++) lines.push(`class C${i} {\n +f${i}() : int\n}`);
  for (let i = 0; i < 144; i++) for (let k = 0; k < 4; k++) lines.push(`C${i} --> C${rnd(144)}`);
  lines.push('@enduml');
  return lines.join('\n');
}

const INC = 'http://include.test';

describe('PlantUML worker faults', { skip: toolSkip('java', ['-version']) }, () => {
  let app: FastifyInstance;
  let inc: IncludeServer;
  const dataDir = tempDir(); // shared, so the worker entry point is compiled once
  before(async () => {
    inc = await startIncludeServer();
    app = await buildTestServer({
      overrides: {
        server: { dataDir },
        plantuml: {
          workers: 1,
          workerThreads: 1,
          queueSize: 1,
          timeoutMs: 3000,
          urlAllowlist: [`${INC}/`],
        },
        // Includes are fetched by the server through its address guard: loopback by an override.
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
      },
    });
  });
  after(async () => {
    await app?.close();
    await inc?.close();
  });

  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'text/plain' } });

  it('kills a render that passes the timeout (JVM and dot), answers 504, and the next request works', async () => {
    const warm = await post('/plantuml/txt', 'A -> B : warm');
    assert.equal(warm.statusCode, 200);
    const [pid] = workerPids();
    assert.ok(pid);
    const r = await post('/plantuml/svg', pathological());
    assert.equal(r.statusCode, 504);
    assert.match(r.body, /timed out/);
    assert.ok(await until(() => !groupAlive(pid), 10_000), 'the worker process group (JVM + dot) is gone');
    const next = await post('/plantuml/txt', 'A -> B : after the timeout');
    assert.equal(next.statusCode, 200);
    assert.match(next.body, /after the timeout/);
    assert.notEqual(workerPids()[0], pid);
  });

  it('retries a request whose worker was killed mid-render on a fresh worker', async () => {
    await post('/plantuml/txt', 'A -> B : make sure a worker is up');
    const [pid] = workerPids();
    assert.ok(pid);
    inc.hold = true;
    const held = inc.nextHeld();
    const pending = post('/plantuml/txt', `@startuml\n!include ${INC}/slow-kill.puml\n@enduml`);
    await held; // the worker is now inside the render, waiting for the include
    process.kill(pid, 'SIGKILL');
    inc.release();
    const r = await pending;
    assert.equal(r.statusCode, 200, r.body.slice(0, 200));
    assert.match(r.body, /Carol/);
    // The server fetches includes for the JVMs: the retry on the new worker joined the same fetch.
    assert.equal(inc.hits.get('/slow-kill.puml'), 1);
    const [next] = workerPids();
    assert.ok(next && next !== pid);
  });

  it('answers 503 with Retry-After when the queue is full, and serves the queued work after', async () => {
    await post('/plantuml/txt', 'A -> B : up');
    inc.hold = true;
    const held = inc.nextHeld();
    const first = post('/plantuml/txt', `@startuml\n!include ${INC}/slow-queue.puml\n@enduml`);
    await held;
    const queued = post('/plantuml/txt', 'A -> B : queued behind');
    await new Promise((r) => setImmediate(r));
    const refused = await post('/plantuml/txt', 'A -> B : one too many');
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(refused.headers['content-type'] as string, /^text\/plain/);
    inc.release();
    const [a, b] = await Promise.all([first, queued]);
    assert.equal(a.statusCode, 200);
    assert.equal(b.statusCode, 200);
    assert.match(b.body, /queued behind/);
  });

  it('retries the other renders of a worker killed for a timeout', async () => {
    const shared = await buildTestServer({
      overrides: {
        server: { dataDir },
        plantuml: { workers: 1, workerThreads: 2, timeoutMs: 3000, urlAllowlist: [`${INC}/`] },
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
      },
    });
    try {
      const send = (payload: string) =>
        shared.inject({
          method: 'POST',
          url: '/plantuml/txt',
          payload,
          headers: { 'content-type': 'text/plain' },
        });
      assert.equal((await send('A -> B : up')).statusCode, 200);
      // The runaway starts first, so its deadline (not the sibling's) is the one that kills the JVM.
      const runaway = send(pathological());
      await new Promise((r) => setTimeout(r, 1000));
      inc.hold = true;
      const held = inc.nextHeld();
      const sibling = send(`@startuml\n!include ${INC}/slow-sibling.puml\n@enduml`);
      await held; // both renders are now in flight on the one worker
      assert.equal((await runaway).statusCode, 504);
      inc.release();
      const r = await sibling;
      assert.equal(r.statusCode, 200, r.body.slice(0, 200));
      assert.match(r.body, /Carol/);
      assert.equal(inc.hits.get('/slow-sibling.puml'), 1);
    } finally {
      await shared.close();
    }
  });

  it('leaves no worker JVM behind when the app closes', async () => {
    const extra = await buildTestServer({ overrides: { server: { dataDir }, plantuml: { workers: 1 } } });
    const before = new Set(workerPids());
    let mine: number[];
    try {
      const r = await extra.inject({ url: '/plantuml/txt/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000' });
      assert.equal(r.statusCode, 200);
      mine = workerPids().filter((p) => !before.has(p));
      assert.equal(mine.length, 1);
    } finally {
      await extra.close();
    }
    assert.ok(await until(() => !groupAlive(mine[0]!)));
  });
});

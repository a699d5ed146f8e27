// Timeouts, killed workers, memory bombs and a full queue do not take the service down. One small
// pool (one worker, a short timeout) for most of the file. Every server here uses the run's shared
// PlantUML build directory (test/helpers/server.ts): a data directory of their own would compile the
// worker and train its class archive again for each (what cds.test.ts is about, not this file).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { memoryBomb, runaway } from '../../../../test/fixtures/plantuml/bombs.ts';
import { type IncludeServer, startIncludeServer } from '../../../../test/fixtures/plantuml/include-server.ts';
import { workerJvmPids } from '../../../../test/helpers/jvm.ts';
import { buildTestServer, LogCapture } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';

/** Child processes of `pid` running `name`. */
function children(pid: number, name: string): number[] {
  const r = spawnSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm]) => comm === name)
    .map(([p]) => Number(p));
}

/** Thread ids of `pid` running at nice 19 (Linux /proc: field 19 of each task's stat). */
function niceThreads(pid: number): Set<string> {
  const out = new Set<string>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      if (f.slice(f.lastIndexOf(')') + 2).split(' ')[16] === '19') out.add(t);
    } catch {} // ended meanwhile
  }
  return out;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Nice value of a process. */
function niceOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(f.slice(f.lastIndexOf(')') + 2).split(' ')[16]);
}

const INC = 'http://include.test';

/** devutil_plantuml_workers of `app`, by state. */
async function workerStates(app: FastifyInstance): Promise<Record<string, number>> {
  const text = (await app.inject({ url: '/metrics' })).body;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^devutil_plantuml_workers\{state="(\w+)"\} (\d+)/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

describe('PlantUML worker faults', { skip: toolSkip('java', ['-version']), timeout: 240_000 }, () => {
  let app: FastifyInstance;
  let inc: IncludeServer;
  before(async () => {
    inc = await startIncludeServer();
    app = await buildTestServer({
      overrides: {
        diagrams: {
          workers: 1,
          workerThreads: 1,
          queueSize: 1,
          timeoutMs: 12_000, // a small render took over 6 s at load 51 (Node 26)
          // Every render here comes from one client: the quarantine has its own test.
          quarantineSec: 0,
          urlAllowlist: [`${INC}/`],
        },
        // Includes are fetched by the server through its address guard: loopback by an override.
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
      },
    });
  });
  /**
   * The server of 'leaves the other renders...' (6 s deadline, two render threads) and the JVMs of
   * other servers then: the flood runs on it next, and the test after that closes it (its JVM up:
   * one more server would start one more JVM for that alone).
   */
  let shared: { app: FastifyInstance; others: number[] } | undefined;
  after(async () => {
    await shared?.app.close();
    await app?.close();
    await inc?.close();
  });

  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'text/plain' } });

  it('lowers an abandoned render thread to the least CPU priority', async () => {
    await post('/plantuml/txt', 'A -> B : up');
    const [pid] = workerJvmPids();
    assert.ok(pid);
    const before = niceThreads(pid); // an earlier test's abandoned render may still run out
    // Smetana lays the graph out inside the JVM: the thread keeps running after the deadline.
    const r = await post('/plantuml/svg', runaway(true));
    assert.equal(r.statusCode, 504);
    const lowered = () => [...niceThreads(pid)].some((t) => !before.has(t));
    await waitFor(lowered, 'the abandoned render thread to run at nice 19', 5000);
    const next = await post('/plantuml/txt', 'A -> B : beside the abandoned render');
    assert.equal(next.statusCode, 200);
    assert.deepEqual(workerJvmPids(), [pid]);
  });

  // Right after the abandoned Smetana render: the kill also ends that render's CPU use.
  it('retries a request whose worker was killed mid-render on a fresh worker', async () => {
    await post('/plantuml/txt', 'A -> B : make sure a worker is up');
    const [pid] = workerJvmPids();
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
    const [next] = workerJvmPids();
    assert.ok(next && next !== pid);
  });

  it('answers 422 for a diagram that needs more than the heap, and goes on serving', async () => {
    await post('/plantuml/txt', 'A -> B : up');
    const r = await post('/plantuml/svg', memoryBomb());
    assert.equal(r.statusCode, 422, r.body.slice(0, 200));
    assert.match(r.body, /more memory/);
    const next = await post('/plantuml/txt', 'A -> B : after the memory bomb');
    assert.equal(next.statusCode, 200);
    assert.match(next.body, /after the memory bomb/);
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

  // One runaway layout (in dot) proves both: it costs its deadline and two seconds more of CPU.
  it('answers 504 for a render past the timeout, leaves the other renders of its worker alone, kills its dot and serves the next diagram on the same JVM', async () => {
    // The first server's JVMs (one may still be stopping after the memory bomb replaced it).
    const others = workerJvmPids();
    const two = await buildTestServer({
      overrides: {
        diagrams: {
          workers: 1,
          workerThreads: 2,
          timeoutMs: 6000,
          quarantineSec: 0,
          urlAllowlist: [`${INC}/`],
        },
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
      },
    });
    shared = { app: two, others };
    const send = (payload: string) =>
      two.inject({
        method: 'POST',
        url: '/plantuml/txt',
        payload,
        headers: { 'content-type': 'text/plain' },
      });
    // A small render can pass this server's short deadline on a loaded machine (a cold JVM's first
    // one gave 504 at load 30): asked again (on the JVM that is up by then). `label` is in a 200.
    const small = async (label: string) => {
      let r = await send(`A -> B : ${label}`);
      for (let i = 1; i < 3 && r.statusCode === 504; i++) r = await send(`A -> B : ${label} ${i}`);
      assert.equal(r.statusCode, 200, r.body.slice(0, 200));
      assert.match(r.body, new RegExp(label));
    };
    await small('up');
    const mine = () => workerJvmPids().filter((p) => !others.includes(p));
    const pids = mine();
    assert.equal(pids.length, 1);
    const pid = pids[0]!;
    // The runaway starts first, so its deadline passes while the sibling waits for its include.
    // Three seconds first, not one: the sibling's own deadline runs while it is held, and once
    // released it has what is left to render (one second was little at load 40).
    const runner = two.inject({
      method: 'POST',
      url: '/plantuml/svg',
      payload: runaway(),
      headers: { 'content-type': 'text/plain' },
    });
    await new Promise((r) => setTimeout(r, 3000));
    inc.hold = true;
    const held = inc.nextHeld();
    const sibling = send(`@startuml\n!include ${INC}/slow-sibling.puml\n@enduml`);
    await held; // both renders are now in flight on the one worker
    const timedOut = await runner;
    assert.equal(timedOut.statusCode, 504, timedOut.body.slice(0, 300));
    assert.match(timedOut.body, /timed out/);
    inc.release();
    const r = await sibling;
    assert.equal(r.statusCode, 200, r.body.slice(0, 200));
    assert.match(r.body, /Carol/);
    assert.equal(inc.hits.get('/slow-sibling.puml'), 1);
    // The next diagram on the same JVM ('lowers an abandoned render thread...' shows it on a worker
    // of one thread, which has to be replaced).
    await small('after the timeout');
    assert.deepEqual(mine(), pids, 'no worker was replaced');
    // The abandoned render's dot is killed once it is older than the timeout (+2 s).
    // Every 250 ms: each look spawns ps, and the dot lives two seconds past the deadline.
    await waitFor(() => children(pid, 'dot').length === 0, 'the runaway dot to be gone', 15_000, 250);
    assert.ok(groupAlive(pid));
  });

  // On the 6 s server, not the quarantine's (12 s, for its cold nice-19 JVM): each flood render is
  // a runaway dot that burns its deadline and two seconds more, and the second runs after the first.
  it('holds a client flooding runaway layouts to its share of the render threads, and serves another client beside it', async () => {
    assert.ok(shared, "runs on the server of 'leaves the other renders...'");
    const two = shared.app;
    const send = (payload: string, remoteAddress: string, url = '/plantuml/txt') =>
      two.inject({ method: 'POST', url, payload, remoteAddress, headers: { 'content-type': 'text/plain' } });
    // Two threads, a 50 % share: the flood runs one render and queues the other.
    const flood = [0, 1].map((i) => send(runaway(false, `flood ${i}`), '198.51.100.3', '/plantuml/svg'));
    let w: Record<string, number> = {};
    await waitFor(
      async () => {
        w = await workerStates(two);
        return (w['busy'] ?? 0) + (w['queued'] ?? 0) === 2;
      },
      'both flood renders admitted',
      30_000,
    );
    assert.deepEqual([w['busy'], w['queued']], [1, 1], 'one running, one waiting');
    // The other client's diagram runs on the second thread while the runaway holds the first; on a
    // loaded machine a small render can pass this server's short deadline: asked again then.
    let other = await send('A -> B : beside the flood', '198.51.100.4');
    for (let i = 1; i < 3 && other.statusCode === 504; i++)
      other = await send(`A -> B : beside the flood ${i}`, '198.51.100.4');
    assert.equal(other.statusCode, 200, other.body.slice(0, 200));
    assert.match(other.body, /beside the flood/);
    assert.deepEqual(
      (await Promise.all(flood)).map((r) => r.statusCode),
      [504, 504],
    );
  });

  it('leaves no worker JVM behind when the app closes', async () => {
    // The previous test's server (a fresh one if that test did not get as far as making it).
    const reused = shared;
    shared = undefined;
    const extra = reused?.app ?? (await buildTestServer({ overrides: { diagrams: { workers: 1 } } }));
    const notMine = new Set(reused?.others ?? workerJvmPids());
    let mine: number[];
    try {
      const r = await extra.inject({ url: '/plantuml/txt/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000' });
      assert.equal(r.statusCode, 200);
      mine = workerJvmPids().filter((p) => !notMine.has(p));
      assert.equal(mine.length, 1);
    } finally {
      await extra.close();
    }
    await waitFor(() => !groupAlive(mine[0]!), "the closed server's worker group to be gone", 5000);
  });
});

describe('PlantUML quarantine', { skip: toolSkip('java', ['-version']), timeout: 240_000 }, () => {
  let app: FastifyInstance;
  const logs = new LogCapture();
  before(async () => {
    app = await buildTestServer({
      logs,
      overrides: {
        // The quarantine JVM runs at nice 19: on a machine this busy its first (cold) render of a
        // small diagram took over 6 s once; the deadline leaves it room.
        diagrams: { workers: 1, workerThreads: 2, timeoutMs: 12_000 },
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

  /** devutil_plantuml_worker_events_total of one pool, by event. */
  const poolEvents = async (pool: 'main' | 'quarantine'): Promise<Record<string, number>> => {
    const text = (await app.inject({ url: '/metrics' })).body;
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^devutil_plantuml_worker_events_total\{([^}]*)\} (\d+)/gm))
      if (m[1]!.includes(`pool="${pool}"`)) out[/event="(\w+)"/.exec(m[1]!)![1]!] = Number(m[2]);
    return out;
  };
  /** This process's worker JVMs at nice 19 (the quarantine's) and the others. */
  const jvmsByNice = () => {
    const nice = (p: number) => {
      try {
        return niceOf(p);
      } catch {
        return Number.NaN; // ended meanwhile
      }
    };
    const pids = workerJvmPids().map((p) => [p, nice(p)] as const);
    return {
      low: pids.filter(([, n]) => n === 19).map(([p]) => p),
      /** The others' nice values. */
      normal: pids.filter(([, n]) => n !== 19 && !Number.isNaN(n)).map(([, n]) => n),
    };
  };
  /** What a failed assertion prints: the answer and both pools' events. */
  const seen = async (r: { statusCode: number; body: string }) =>
    `${r.statusCode} ${r.body.slice(0, 200)} main=${JSON.stringify(await poolEvents('main'))} quarantine=${JSON.stringify(await poolEvents('quarantine'))}\n` +
    // The server's warnings: an engine exception names where it was thrown.
    logs.lines
      .filter((l) => /"level":(40|50)/.test(l))
      .slice(-5)
      .join('\n');

  // Which JVM served is read from the pools' own events and the JVMs' nice values, not from the
  // main JVM's pid: on a loaded machine the main pool may replace its JVM (a ping left unanswered
  // behind an abandoned render), which is not what this test is about.
  it('renders a diagram that timed out, and a client whose renders timed out twice, in a low-priority JVM of its own', async () => {
    const up = await post('A -> B : up', '198.51.100.1');
    assert.equal(up.statusCode, 200, await seen(up));
    const bomb = runaway(true, 'suspect');
    const first = await post(bomb, '198.51.100.2');
    assert.equal(first.statusCode, 504, await seen(first));
    // One strike: the client's other diagrams stay on the main JVM; no quarantine JVM starts.
    const once = await post('A -> B : after one strike', '198.51.100.2');
    assert.equal(once.statusCode, 200, await seen(once));
    assert.equal((await poolEvents('quarantine'))['spawn'], undefined, await seen(once));
    assert.deepEqual(jvmsByNice().low, []);
    // The same diagram again: rendered (and timed out) in quarantine, whose JVM is killed for it.
    const second = await post(bomb, '198.51.100.2');
    assert.equal(second.statusCode, 504, await seen(second));
    const q = await poolEvents('quarantine');
    assert.equal(q['timeout'], 1, await seen(second));
    // One start, or two when its first start refused the shared class archive.
    const spawned = q['spawn'] ?? 0;
    assert.ok(spawned >= 1, await seen(second));
    await waitFor(
      async () => (await poolEvents('quarantine'))['exit'] === spawned && jvmsByNice().low.length === 0,
      'the quarantine JVM to be killed',
      10_000,
      250,
    );
    // Two strikes: the client's next diagram is served by a quarantine JVM at the lowest priority.
    const again = await post('A -> B : from the suspect', '198.51.100.2');
    assert.equal(again.statusCode, 200, await seen(again));
    assert.match(again.body, /from the suspect/);
    assert.ok(((await poolEvents('quarantine'))['spawn'] ?? 0) > spawned, await seen(again));
    const jvms = jvmsByNice();
    assert.equal(jvms.low.length, 1, JSON.stringify(jvms));
    assert.ok(jvms.normal.length >= 1, JSON.stringify(jvms));
    assert.ok(
      jvms.normal.every((n) => n === 0),
      JSON.stringify(jvms),
    );
    // Someone else's diagram is served beside the suspect, by a JVM at normal priority.
    const other = await post('A -> B : someone else', '198.51.100.1');
    assert.equal(other.statusCode, 200, await seen(other));
    assert.match(other.body, /someone else/);
    assert.ok(jvmsByNice().normal.length >= 1);
  });
});

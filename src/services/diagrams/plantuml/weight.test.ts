// The worker JVM's weight (issue 35): it starts with DEVUTIL_DIAGRAMS_WORKER_INITIAL_HEAP, not
// Java's 1/64 of the machine, and after DEVUTIL_DIAGRAMS_WORKER_IDLE_SEC without renders it exits,
// returning its memory, and the next diagram starts one again; a kept JVM shrinks its heap back
// after a burst once renders stop, and trims its native heap where the JVM can. Uses the run's shared build directory.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { workerJvmPids } from '../../../../test/helpers/jvm.ts';
import { buildTestServer, sharedDiagramsBuild, tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { buildWorker, defaultJar, detectJavaCached, NATIVE_TRIM_MS } from './java.ts';
import { JavaWorker } from './worker.ts';

const workerPids = () => workerJvmPids();

describe('PlantUML worker weight', { skip: toolSkip('java', ['-version']), timeout: 240_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({
      overrides: {
        diagrams: {
          workers: 1,
          workerThreads: 2,
          workerIdleSec: 2,
          workerInitialHeap: 48 * 1024 ** 2,
          quarantineSec: 0,
        },
      },
    });
  });
  after(async () => {
    await app?.close();
  });

  const post = (payload: string) =>
    app.inject({ method: 'POST', url: '/plantuml/txt', payload, headers: { 'content-type': 'text/plain' } });

  it('starts the JVM with the configured heap, stops it after the idle time and starts one again for the next diagram', async () => {
    const first = await post('A -> B : before idle');
    assert.equal(first.statusCode, 200);
    const [pid] = workerPids();
    assert.ok(pid, 'a worker JVM rendered it');
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    assert.ok(args.includes('-Xms48m'), `the initial heap is set: ${args.slice(0, 4).join(' ')}`);
    const { nativeTrim } = await detectJavaCached('java', tempDir());
    assert.equal(
      args.includes(`-XX:TrimNativeHeapInterval=${NATIVE_TRIM_MS}`),
      nativeTrim,
      'the JVM trims its native heap where it can',
    );
    await waitFor(() => !workerPids().includes(pid), 'the idle JVM to exit', 60_000, 200);
    assert.deepEqual(workerPids(), [], 'no JVM started in its place while nothing is asked');
    const next = await post('A -> B : after idle');
    assert.equal(next.statusCode, 200);
    assert.match(next.body, /after idle/);
    const now = workerPids();
    assert.equal(now.length, 1);
    assert.notEqual(now[0], pid);
  });
});

describe('PlantUML worker heap after a burst', {
  skip: toolSkip('java', ['-version']),
  timeout: 240_000,
}, () => {
  let w: JavaWorker | undefined;
  after(async () => {
    w?.kill();
    await w?.waitExit();
  });

  it('collects and shrinks the heap once renders have stopped for the idle time, and renders after it', async () => {
    const buildDir = sharedDiagramsBuild(false, {}) ?? tempDir();
    const info = await detectJavaCached('java', buildDir);
    assert.ok(info.ok, info.reason);
    const jar = defaultJar();
    w = new JavaWorker({
      java: 'java',
      jar,
      classDir: await buildWorker(info, jar, buildDir),
      heapBytes: 256 * 1024 ** 2,
      initialHeapBytes: 8 * 1024 ** 2,
      profile: 'INTERNET',
      urlAllowlist: [],
      limitSize: 4096,
      threads: 2,
      jvmFlags: ['-Ddevutil.idleGcMs=1500'],
    });
    await w.warmed;
    const worker = w;
    // A burst that leaves garbage behind: 40 sequence diagrams of 200 messages each.
    const big = (i: number) =>
      Array.from({ length: 200 }, (_, k) => `A${k % 7} -> B${k % 5} : burst ${i} message ${k}`).join('\n');
    for (let i = 0; i < 40; i += 2) {
      const rs = await Promise.all(
        [i, i + 1].map((n) => worker.request({ op: 'render', format: 'svg', source: big(n) })),
      );
      for (const r of rs) assert.equal(r.status, 'ok');
    }
    const burstEnd = worker.idleGc;
    await waitFor(
      () => worker.idleGc !== burstEnd && worker.idleGc !== null,
      'an idle collection after the burst',
      60_000,
      100,
    );
    const gc = worker.idleGc!;
    assert.ok(gc.after < gc.before, `the committed heap shrank: ${gc.before} -> ${gc.after}`);
    assert.ok(gc.after >= 8 * 1024 ** 2, `not under -Xms: ${gc.after}`);
    const next = await worker.request({
      op: 'render',
      format: 'txt',
      source: 'A -> B : after the collection',
    });
    assert.equal(next.status, 'ok');
    assert.match(next.body.toString(), /after the collection/);
  });
});

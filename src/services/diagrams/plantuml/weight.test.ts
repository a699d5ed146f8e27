// The worker JVM's weight (issue 35): it starts with DEVUTIL_DIAGRAMS_WORKER_INITIAL_HEAP, not
// Java's 1/64 of the machine, and after DEVUTIL_DIAGRAMS_WORKER_IDLE_SEC without renders it exits,
// returning its memory, and the next diagram starts one again. Uses the run's shared build directory.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { workerJvmPids } from '../../../../test/helpers/jvm.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';

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

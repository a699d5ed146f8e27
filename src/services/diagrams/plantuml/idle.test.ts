// DEVUTIL_DIAGRAMS_WORKER_IDLE_SEC: a worker JVM without renders for that long exits, returning its
// memory, and the next diagram starts one again (issue 35). Uses the run's shared build directory.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';

/** PIDs of this test process's PlantUML worker JVMs (not the class-data archive's training run). */
function workerPids(): number[] {
  const r = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => l.includes('DevutilPlantumlWorker') && !l.includes('-Ddevutil.train'))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

describe('PlantUML worker idle exit', { skip: toolSkip('java', ['-version']), timeout: 240_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({
      overrides: { diagrams: { workers: 1, workerThreads: 2, workerIdleSec: 2, quarantineSec: 0 } },
    });
  });
  after(async () => {
    await app?.close();
  });

  const post = (payload: string) =>
    app.inject({ method: 'POST', url: '/plantuml/txt', payload, headers: { 'content-type': 'text/plain' } });

  it('stops the JVM after the idle time and starts one again for the next diagram', async () => {
    const first = await post('A -> B : before idle');
    assert.equal(first.statusCode, 200);
    const [pid] = workerPids();
    assert.ok(pid, 'a worker JVM rendered it');
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

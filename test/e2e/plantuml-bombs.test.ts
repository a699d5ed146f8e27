// Issue 24, acceptance 4 (the PlantUML side): one client (127.0.0.2) sends PlantUML diagrams that run
// past the render timeout (a layout in `dot`, one in the JVM) and one that exhausts the heap, for
// 20 s, while another client (127.0.0.1) keeps asking for small new PlantUML diagrams.
//
// The product requirement is "served within 3 s each time". A wall-clock bound cannot be asserted on
// a shared 2-core CI machine (a small render alone can take seconds at load 30), so the test asserts
// what the 3 s depend on and prints the latencies: every small diagram is served (200), and none of
// them waited for a JVM start or was retried because its JVM died (the pool's cold_wait and crash
// events of the main pool stay at zero for the whole attack), and no JVM stopped answering. Before
// this change each timeout killed the shared JVM, and every render in flight or arriving waited for a
// cold start: those events are exactly what a victim stuck behind a restart shows. The bench row
// "a render that times out costs other clients less than 2x their p99" (bench/plantuml-bombs.ts) has the
// figure.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { memoryBomb, runaway } from '../fixtures/plantuml/bombs.ts';
import { type Running, startTestServer } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const BOMBS = [
  (i: number) => runaway(false, i),
  (i: number) => memoryBomb(i),
  (i: number) => runaway(true, i),
];

/** devutil_plantuml_worker_events_total of the main pool, by event. */
async function mainEvents(srv: Running): Promise<Record<string, number>> {
  const text = (await srv.app.inject({ url: '/metrics' })).body;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^devutil_plantuml_worker_events_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels['pool'] === 'main') out[labels['event']!] = Number(m[2]);
  }
  return out;
}

describe('PlantUML bombs from one client, small diagrams for another', {
  skip: toolSkip('java', ['-version']),
  timeout: 240_000,
}, () => {
  let srv: Running;
  const bomber = new Agent({ localAddress: '127.0.0.2', connections: 8 });
  const victim = new Agent({ localAddress: '127.0.0.1' });
  before(async () => {
    srv = await startTestServer({
      overrides: {
        // A small heap: the memory bombs meet it sooner, so they burn less CPU (512 MiB took past
        // the 8 s deadline at load 26); the victims' small diagrams need far less.
        diagrams: { timeoutMs: 8000, workers: 1, workerHeap: 128 * 1024 ** 2, cacheMemory: 0, cacheDisk: 0 },
      },
    });
    // The JVM up and warm first: the measurement is about bombs, not the cold start. A cold JVM's
    // first render passed the 8 s deadline at load 33 (504): asked again, once (a second timeout
    // would make the victim a suspect, rendered in quarantine).
    for (let i = 0, ok = 0; ok < 3; i++) {
      const r = await request(`${srv.url}/plantuml/svg`, {
        method: 'POST',
        body: `Alice -> Bob : warm ${i}`,
        dispatcher: victim,
      });
      const text = await r.body.text();
      if (r.statusCode === 200) ok++;
      else assert.ok(r.statusCode === 504 && i === ok, `warm-up ${i}: ${r.statusCode} ${text.slice(0, 200)}`);
    }
  });
  after(async () => {
    await srv?.close();
    await bomber.close();
    await victim.close();
  });

  it('serves every small diagram, none behind a JVM restart, while the bombs time out or run out of memory', async () => {
    const events0 = await mainEvents(srv);
    const until = Date.now() + 20_000;
    const bombStatus = new Map<number, number>();
    const flood = async (lane: number) => {
      for (let i = lane; Date.now() < until; i += 4) {
        const r = await request(`${srv.url}/plantuml/svg`, {
          method: 'POST',
          body: BOMBS[i % BOMBS.length]!(i),
          dispatcher: bomber,
        });
        await r.body.dump();
        bombStatus.set(r.statusCode, (bombStatus.get(r.statusCode) ?? 0) + 1);
      }
    };
    const latencies: number[] = [];
    const failures: string[] = [];
    const small = async () => {
      for (let n = 0; Date.now() < until; n++) {
        const t0 = performance.now();
        const r = await request(`${srv.url}/plantuml/svg`, {
          method: 'POST',
          body: `Alice -> Bob : victim ${n}`,
          dispatcher: victim,
        });
        const text = await r.body.text();
        latencies.push(performance.now() - t0);
        if (r.statusCode !== 200) failures.push(`${r.statusCode} ${text.slice(0, 120)}`);
        else if (!text.includes(`victim ${n}`)) failures.push(`diagram ${n} without its label`);
      }
    };
    await Promise.all([flood(0), flood(1), flood(2), flood(3), small()]);
    const events = await mainEvents(srv);
    const delta = (e: string) => (events[e] ?? 0) - (events0[e] ?? 0);
    const sorted = [...latencies].sort((a, b) => a - b);
    process.stderr.write(
      `victim latencies under PlantUML bombs: n=${sorted.length} median=${Math.round(sorted[sorted.length >> 1] ?? 0)}ms ` +
        `max=${Math.round(sorted.at(-1) ?? 0)}ms over 3 s: ${sorted.filter((x) => x > 3000).length}; ` +
        `bomb answers ${JSON.stringify(Object.fromEntries(bombStatus))}; main pool events ${JSON.stringify(
          Object.fromEntries(['timeout', 'retire', 'spawn', 'exit'].map((e) => [e, delta(e)])),
        )}\n`,
    );
    assert.deepEqual(failures, []);
    assert.ok(latencies.length >= 3, 'the small diagrams were asked for repeatedly');
    assert.equal(delta('cold_wait'), 0, 'no small diagram waited for a JVM start');
    assert.equal(delta('crash'), 0, 'no render was retried because its JVM died');
    assert.equal(delta('unresponsive'), 0, 'no JVM stopped answering');
    // The bombs did run into the deadline and the heap cap, and got no other failure than those.
    assert.ok((bombStatus.get(504) ?? 0) > 0, 'runaway layouts ended at the render timeout');
    assert.ok((bombStatus.get(422) ?? 0) > 0, 'the memory bomb was refused');
    for (const s of bombStatus.keys()) assert.ok([422, 503, 504].includes(s), `bomb status ${s}`);
  });
});

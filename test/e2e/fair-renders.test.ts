// Issue 16, acceptance 5: one client flooding the render pools (heavy diagrams, 4096 px AVIF images)
// from 127.0.0.2 does not keep another client's small render from 127.0.0.1 from being served.
// Real server over HTTP, real sharp, real PlantUML JVM, default share (50%). The flood's diagrams
// stand in for heavy ones by `!include`-ing from a fixture that holds the request until released,
// so they occupy their render threads for as long as the test wants without burning the CPU.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { type IncludeServer, startIncludeServer } from '../fixtures/plantuml/include-server.ts';
import { type Running, startTestServer } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** The include fixture's name; egress.resolve maps it to the fixture (the guard refuses loopback). */
const INC = 'http://include.test';

describe('fair render pools', { skip: toolSkip('java', ['-version']) }, () => {
  let srv: Running;
  let inc: IncludeServer;
  // The source address is a Client option (a `connect.localAddress` would be overridden).
  const flooder = new Agent({ localAddress: '127.0.0.2', connections: 64 });
  const bystander = new Agent({ localAddress: '127.0.0.3' });
  const victim = new Agent({ localAddress: '127.0.0.1' });

  before(async () => {
    inc = await startIncludeServer();
    srv = await startTestServer({
      overrides: {
        ip: { enabled: false },
        files: { enabled: false },
        avatar: { enabled: false },
        telegram: { enabled: false },
        proxy: { enabled: false },
        // Two slots and four queue places each: one client may hold one slot and two places.
        image: {
          sources: ['generator'],
          concurrency: 2,
          queueLength: 4,
          cacheMemoryBytes: 0,
          cacheDiskBytes: 0,
          rateLimit: 'off',
        },
        diagrams: {
          workers: 1,
          workerThreads: 2,
          queueSize: 4,
          timeoutMs: 120_000,
          cacheMemory: 0,
          cacheDisk: 0,
          urlAllowlist: [`${INC}/`],
        },
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
      },
    });
  });
  after(async () => {
    inc?.release();
    await srv?.close();
    await inc?.close();
    await Promise.all([flooder.close(), bystander.close(), victim.close()]);
  });

  const send = async (via: Agent, path: string, body?: string): Promise<Answer> => {
    const res = await request(`${srv.url}${path}`, {
      dispatcher: via,
      method: body === undefined ? 'GET' : 'POST',
      ...(body === undefined ? {} : { body, headers: { 'content-type': 'text/plain' } }),
    });
    const text = Buffer.from(await res.body.arrayBuffer());
    const ra = res.headers['retry-after'];
    return {
      status: res.statusCode,
      retryAfter: typeof ra === 'string' ? ra : undefined,
      body: res.statusCode === 200 ? `${text.length} bytes` : text.toString('utf8'),
    };
  };

  // The timeout only bounds a broken run (a flood that takes every slot keeps its diagrams held).
  it('serves a small image and a small diagram to another client while one client floods both pools', {
    timeout: 240_000,
  }, async () => {
    // A warm JVM first (a third address), so the flood is queued behind renders, not behind start-up.
    assert.equal((await send(bystander, '/plantuml/txt', 'A -> B : warm')).status, 200);

    inc.hold = true;
    const held = inc.nextHeld();
    const done = { image: 0, diagram: 0 };
    const flood = (kind: 'image' | 'diagram', i: number) => {
      const p =
        kind === 'image'
          ? send(flooder, `/rest/api/v1/image?id=flood-${i}&width=4096&height=3072&format=avif`)
          : send(flooder, '/plantuml/txt', `@startuml\n!include ${INC}/slow-flood-${i}.puml\n@enduml`);
      return p.then((a) => {
        if (a.status === 200) done[kind]++;
        return a;
      });
    };
    const images = [0, 1, 2, 3].map((i) => flood('image', i));
    const diagrams = [0, 1, 2, 3].map((i) => flood('diagram', i));
    // One slot and two queue places each are the flooder's share: the fourth of each is refused.
    const refused = (all: Promise<Answer>[]) =>
      Promise.race([
        ...all.map((p) => p.then((a) => (a.status === 503 ? a : never<Answer>()))),
        Promise.all(all).then((): Answer => assert.fail('the flood got more than its share')),
      ]);
    const refusedImage = await refused(images);
    const refusedDiagram = await refused(diagrams);
    assert.ok(Number(refusedImage.retryAfter) >= 1, 'an image refusal carries Retry-After');
    assert.match(refusedImage.body, /"status":0/, 'in the v1 envelope');
    assert.equal(refusedDiagram.retryAfter, '1');
    await held; // a flood diagram holds its thread

    const [small, diagram] = await Promise.all([
      send(victim, '/rest/api/v1/image?id=victim&width=64&height=64'),
      send(victim, '/plantuml/txt', 'Alice -> Bob : small'),
    ]);
    const doneWhenServed = { ...done };
    assert.equal(small.status, 200, small.body);
    assert.equal(diagram.status, 200, diagram.body);
    // Three images and three diagrams of the flood were admitted; the victim did not wait for them.
    assert.ok(doneWhenServed.image < 2, `image flood done before the victim: ${doneWhenServed.image} of 3`);
    assert.equal(doneWhenServed.diagram, 0, 'every admitted flood diagram is still held');

    // The flood is served too once its renders finish: fairness, not a ban.
    inc.release();
    const all = await Promise.all([...images, ...diagrams]);
    assert.deepEqual(all.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 503, 503]);
  });
});

/** A promise that never settles (loses every race). */
function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

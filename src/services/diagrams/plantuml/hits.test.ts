// Cached diagrams answered from headers prepared once per stored body (infra/http/prepared-response.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import plantumlEncoder from 'plantuml-encoder';
import { type IncludeServer, startIncludeServer } from '../../../../test/fixtures/plantuml/include-server.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';

const INC = 'http://include.test';
/** Per request (id, date, expiry, rate-limit budget) or naming the cache use (miss, then hit). */
const DIFFER = [
  'x-request-id',
  'date',
  'expires',
  'x-plantuml-cache',
  'ratelimit-remaining',
  'ratelimit-reset',
];
const without = (h: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !DIFFER.includes(k)));

describe('PlantUML cache hits (prepared answers)', {
  skip: toolSkip('java', ['-version']),
  timeout: 180_000,
}, () => {
  let app: FastifyInstance;
  let inc: IncludeServer;
  before(async () => {
    inc = await startIncludeServer();
    app = await buildTestServer({
      overrides: {
        egress: { resolve: [`include.test=${new URL(inc.url).host}`] },
        diagrams: { workers: 1, urlAllowlist: [`${INC}/allowed/`], includeTtlSec: 0 },
      },
    });
  });
  after(async () => {
    await app?.close();
    await inc?.close();
  });

  for (const fmt of ['svg', 'png', 'txt']) {
    it(`answers a ${fmt} hit with the headers and bytes of the miss (CSP included)`, async () => {
      const url = `/plantuml/${fmt}/${plantumlEncoder.encode(`@startuml\nBob -> Alice : ${fmt} hit\n@enduml`)}`;
      const miss = await app.inject({ url });
      assert.equal(miss.statusCode, 200, miss.body.slice(0, 200));
      assert.equal(miss.headers['x-plantuml-cache'], 'miss');
      const hit = await app.inject({ url });
      const again = await app.inject({ url });
      for (const h of [hit, again]) {
        assert.equal(h.headers['x-plantuml-cache'], 'hit');
        assert.deepEqual(without(h.headers), without(miss.headers));
        assert.ok(h.rawPayload.equals(miss.rawPayload));
      }
      if (fmt === 'svg') assert.match(String(hit.headers['content-security-policy']), /sandbox/);
      const metrics = await app.inject({ url: '/metrics' });
      assert.match(metrics.body, /devutil_plantuml_diagrams_total\{cache="hit",status="200"\} [1-9]/);
    });
  }

  it('answers a conditional request on a hit with 304, the same ETag and no body', async () => {
    const url = `/plantuml/svg/${plantumlEncoder.encode('@startuml\nBob -> Alice : conditional\n@enduml')}`;
    const first = await app.inject({ url });
    await app.inject({ url });
    const etag = first.headers.etag as string;
    const nm = await app.inject({ url, headers: { 'if-none-match': etag } });
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.headers.etag, etag);
    assert.equal(nm.rawPayload.length, 0);
  });

  it('gives a hit the new ETag once the diagram is rendered again for a changed include', async () => {
    const path = '/allowed/hits.puml';
    inc.files.set(path, 'Bob -> Carol : one\n');
    const url = `/plantuml/svg/${plantumlEncoder.encode(`@startuml\n!include ${INC}${path}\n@enduml`)}`;
    const first = await app.inject({ url });
    const hitOne = await app.inject({ url });
    assert.equal(hitOne.headers['x-plantuml-cache'], 'hit');
    assert.equal(hitOne.headers.etag, first.headers.etag);
    inc.files.set(path, 'Bob -> Carol : two, longer\n');
    const changed = await app.inject({ url });
    assert.equal(changed.headers['x-plantuml-cache'], 'miss');
    const hitTwo = await app.inject({ url });
    assert.equal(hitTwo.headers['x-plantuml-cache'], 'hit');
    assert.notEqual(hitTwo.headers.etag, first.headers.etag);
    assert.equal(hitTwo.headers.etag, changed.headers.etag);
    assert.ok(hitTwo.rawPayload.equals(changed.rawPayload));
    assert.match(hitTwo.rawPayload.toString(), /two, longer/);
    assert.equal(hitTwo.headers['content-length'], String(changed.rawPayload.length));
  });
});

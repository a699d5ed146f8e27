// Cached PlantUML GET diagrams repeated by the fast lane (infra/http/fast-lane.ts): the router's
// bytes and headers, 304s, the diagrams rate limit charged, the diagram counters and http metrics
// counting each repeat; a request whose headers pick another rendering (the color mapper) and a
// diagram that read URLs stay the router's. Real HTTP over loopback (inject() bypasses the lane).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import plantumlEncoder from 'plantuml-encoder';
import { type Answer, getFrom, stableHeaders } from '../../../../test/helpers/lane.ts';
import { type Running, startTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';

const get = getFrom;
const stable = (h: Answer['headers']) => stableHeaders(h);
const LIMIT = 30;

describe('the fast lane: cached PlantUML diagrams', {
  skip: toolSkip('java', ['-version']),
  timeout: 180_000,
}, () => {
  let s: Running;
  before(async () => {
    s = await startTestServer({
      overrides: {
        server: { fastLane: true },
        diagrams: { workers: 1, rateLimit: `${LIMIT}/min` },
      },
    });
  });
  after(() => s?.close());
  const answered = () => s.app.ctx.lane.answered;
  const metric = async (line: RegExp) => {
    const m = await get(`${s.url}/metrics`, '127.0.0.1');
    return Number(line.exec(m.body.toString())?.[1] ?? 0);
  };

  it('repeats a cached diagram with the bytes and headers of the router, 304s and the rate limit', async () => {
    const url = `${s.url}/plantuml/svg/${plantumlEncoder.encode('@startuml\nBob -> Alice : lane\n@enduml')}`;
    const from = '127.0.0.31';
    const miss = await get(url, from);
    assert.equal(miss.status, 200, miss.body.toString().slice(0, 300));
    assert.equal(miss.headers['x-plantuml-cache'], 'miss');
    // A hit the lane remembers, then one more through the router (it starts the window the lane charges).
    await get(url, from);
    const routed = await get(url, from);
    assert.equal(routed.headers['x-plantuml-cache'], 'hit');
    const hits = /devutil_plantuml_diagrams_total\{cache="hit",status="200"\} (\d+)/;
    const requests =
      /devutil_http_requests_total\{svc="diagrams",route="\/plantuml\/:fmt\/:encoded",method="GET",status="200"\} (\d+)/;
    const h0 = await metric(hits);
    const r0 = await metric(requests);
    const before = answered();
    const again = await get(url, from);
    assert.equal(answered(), before + 1, 'the repeat came from the lane');
    assert.ok(again.body.equals(routed.body));
    assert.deepEqual(stable(again.headers), stable(routed.headers));
    assert.match(String(again.headers['content-security-policy']), /sandbox/);
    assert.equal(Number(again.headers['ratelimit-remaining']), LIMIT - 4, 'charged to the diagrams limit');
    assert.equal((await metric(hits)) - h0, 1, 'counted as a cached diagram');
    assert.equal((await metric(requests)) - r0, 1);

    const etag = String(routed.headers['etag']);
    const nm = await get(url, from, { 'if-none-match': etag });
    assert.equal(nm.status, 304);
    assert.equal(nm.headers['etag'], etag);
    assert.equal(nm.body.length, 0);
    assert.equal(answered(), before + 2, 'the 304 too');

    // Another color mapper is another rendering: the router's.
    const mapped = await get(url, from, { 'x-preferred-color-mapper': 'monochrome' });
    assert.equal(mapped.status, 200);
    assert.equal(answered(), before + 2);
  });

  it('repeats PNG and text hits alike', async () => {
    for (const fmt of ['png', 'txt']) {
      const url = `${s.url}/plantuml/${fmt}/${plantumlEncoder.encode(`@startuml\nBob -> Alice : ${fmt}\n@enduml`)}`;
      const from = '127.0.0.32';
      const first = await get(url, from);
      assert.equal(first.status, 200, `${fmt}: ${first.body.toString().slice(0, 200)}`);
      await get(url, from);
      const routed = await get(url, from);
      const before = answered();
      const again = await get(url, from);
      assert.equal(answered(), before + 1, `${fmt} repeated by the lane`);
      assert.ok(again.body.equals(routed.body));
      assert.deepEqual(stable(again.headers), stable(routed.headers));
    }
  });
});

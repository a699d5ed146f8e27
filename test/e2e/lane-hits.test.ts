// The fast lane (infra/http/fast-lane.ts) repeating the proxy's cache hits (host-path form and the
// npm mount): the same bytes and headers as the router's answer, single ranges (206) and
// conditional requests (304) answered by the lane, a 416 and several ranges left to the router, the
// rate limit and the byte budget charged, metrics and admin usage counting every repeat, and no
// secret in the logs. Real HTTP over loopback (inject() bypasses the lane); each case calls from
// its own loopback address, so each has a rate-limit window and a byte budget of its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FakeNpm, installNpm } from '../fixtures/proxy/npm.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { type Answer, getFrom, PER_REQUEST, stableHeaders } from '../helpers/lane.ts';
import { LogCapture } from '../helpers/server.ts';

const get = getFrom;
// The proxy's Expires is the upstream's, stored with the object: the same on every answer.
const stable = (h: Answer['headers']) =>
  stableHeaders(
    h,
    PER_REQUEST.filter((n) => n !== 'expires'),
  );
// Built at run time: no secret-shaped literal in the source.
const SECRET = ['lane', 'secret', 'Zq7', 'Wm4', 'Lp9'].join('-');
const ADMIN = ['lane', 'admin', 'token', '0123456789abcdef'].join('-');
const LIMIT = 40;
const OBJECT = 4096;
const BUDGET_OBJECTS = 12;

describe('the fast lane: proxy and npm cache hits', { timeout: 120_000 }, () => {
  const logs = new LogCapture();
  let w: World;
  let reg: FakeNpm;
  let base: string;
  before(async () => {
    w = await startWorld({
      git: false,
      logs,
      overrides: {
        server: { fastLane: true },
        log: { level: 'info' },
        admin: { token: ADMIN },
        proxy: {
          secret: SECRET,
          ecosystems: ['npm'],
          rateLimit: `${LIMIT}/min`,
          clientBytes: `${(BUDGET_OBJECTS * OBJECT) / 1024}KiB/day`,
        },
      },
    });
    reg = installNpm(w.net);
    w.net.on('files.pythonhosted.org', async (_req, res, url) => {
      const body = Buffer.alloc(OBJECT, url.pathname.length);
      for (let i = 0; i < body.length; i += 97) body[i] = i & 0xff;
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': body.length,
        etag: '"lane1"',
        'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT',
      });
      res.end(body);
    });
    base = `${w.proxy.url}/proxy/t/${SECRET}`;
    // The rate limiter keeps windows for the lane once a first answer of the bucket is remembered:
    // before that, a client's window is only in the store (its next request goes to the router).
    await warm(file('first'), '127.0.0.20');
  });
  after(() => w?.close());
  const answered = () => w.proxy.app.ctx.lane.answered;
  const file = (name: string) => `${base}/files.pythonhosted.org/packages/ln/${name}.whl`;

  /**
   * Fills the cache, then a router hit the lane remembers, then one more through the router (which
   * counts it in the rate-limit window the lane charges from then on); returns the last.
   */
  async function warm(url: string, from: string, headers: Record<string, string> = {}): Promise<Answer> {
    const miss = await get(url, from, headers);
    assert.equal(miss.status, 200, miss.body.toString().slice(0, 200));
    let hit = miss;
    for (let i = 0; i < 2; i++) {
      hit = await get(url, from, headers);
      assert.equal(hit.status, 200);
      assert.equal(hit.headers['x-cache'], 'HIT');
    }
    return hit;
  }

  it('repeats a proxy hit with the bytes and headers of the router, 304 and a single range included', async () => {
    const url = file('whole');
    const routed = await warm(url, '127.0.0.21');
    const before = answered();
    const again = await get(url, '127.0.0.21');
    assert.equal(answered(), before + 1, 'the repeat came from the lane');
    assert.equal(again.status, 200);
    assert.ok(again.body.equals(routed.body));
    assert.deepEqual(stable(again.headers), stable(routed.headers));
    assert.equal(Number(again.headers['ratelimit-remaining']), LIMIT - 4, 'charged to the proxy rate limit');

    const nm = await get(url, '127.0.0.21', { 'if-none-match': '"lane1"' });
    assert.equal(nm.status, 304);
    assert.equal(nm.headers['etag'], '"lane1"');
    assert.equal(nm.headers['x-cache'], 'HIT');
    assert.equal(nm.headers['content-length'], undefined);
    assert.equal(nm.body.length, 0);
    const ims = await get(url, '127.0.0.21', { 'if-modified-since': 'Wed, 02 Jul 2025 00:00:00 GMT' });
    assert.equal(ims.status, 304);
    assert.equal(answered(), before + 3, 'the 304s too');

    const part = await get(url, '127.0.0.21', { range: 'bytes=100-199' });
    assert.equal(part.status, 206);
    assert.equal(part.headers['content-range'], `bytes 100-199/${OBJECT}`);
    assert.equal(part.headers['content-length'], '100');
    assert.ok(part.body.equals(routed.body.subarray(100, 200)));
    const tail = await get(url, '127.0.0.21', { range: 'bytes=-10' });
    assert.equal(tail.status, 206);
    assert.ok(tail.body.equals(routed.body.subarray(OBJECT - 10)));
    // If-Range names another version: the whole answer.
    const stale = await get(url, '127.0.0.21', { range: 'bytes=0-9', 'if-range': '"other"' });
    assert.equal(stale.status, 200);
    assert.equal(stale.body.length, OBJECT);
    assert.equal(answered(), before + 6, 'the 206s and the If-Range 200 from the lane');
    // Same answers as the router gives them: a 416 and several ranges are its own.
    const beyond = await get(url, '127.0.0.21', { range: `bytes=${OBJECT}-` });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers['content-range'], `bytes */${OBJECT}`);
    const several = await get(url, '127.0.0.21', { range: 'bytes=0-1,10-11' });
    assert.equal(several.status, 200);
    assert.equal(answered(), before + 6, 'the 416 and the multi-range answer from the router');
  });

  it('charges the byte budget, and the 429 comes when it is spent', async () => {
    const url = file('budget');
    await warm(url, '127.0.0.22');
    const before = answered();
    const seen: number[] = [];
    for (let i = 0; i < BUDGET_OBJECTS + 3; i++) seen.push((await get(url, '127.0.0.22')).status);
    const ok = seen.filter((s) => s === 200).length;
    assert.equal(ok, BUDGET_OBJECTS - 3, `statuses ${seen.join(' ')}`);
    assert.deepEqual(seen.slice(ok), Array(seen.length - ok).fill(429));
    assert.ok(answered() - before >= ok - 1, `the lane answered ${answered() - before} of ${ok}`);
    const refused = await get(url, '127.0.0.22');
    assert.equal(refused.status, 429);
    assert.match(refused.body.toString(), /byte budget/);
    // Another client is not affected.
    assert.equal((await get(url, '127.0.0.23')).status, 200);
  });

  it('charges the rate limit and leaves the 429 to the router', async () => {
    const url = file('rate');
    await warm(url, '127.0.0.24');
    const before = answered();
    const seen: Answer[] = [];
    // One byte each: the byte budget stays far off.
    for (let i = 0; i < LIMIT; i++) seen.push(await get(url, '127.0.0.24', { range: 'bytes=0-0' }));
    assert.deepEqual(
      seen.map((a) => a.status),
      [...Array(LIMIT - 3).fill(206), ...Array(3).fill(429)],
    );
    assert.deepEqual(
      seen.slice(0, LIMIT - 3).map((a) => Number(a.headers['ratelimit-remaining'])),
      Array.from({ length: LIMIT - 3 }, (_, i) => LIMIT - 4 - i),
    );
    assert.ok(seen[LIMIT - 3]!.headers['retry-after'], 'a 429 with Retry-After');
    assert.equal(answered() - before, LIMIT - 3, 'every 206 from the lane');
  });

  it('counts lane hits in metrics, admin usage and the cache results, with access lines and no secret', async () => {
    const url = file('counted');
    await warm(url, '127.0.0.25');
    const metric = async (line: RegExp) => {
      const m = await get(`${w.proxy.url}/metrics`, '127.0.0.1');
      return Number(line.exec(m.body.toString())?.[1] ?? 0);
    };
    const requests =
      /devutil_http_requests_total\{svc="proxy",route="[^"]*",method="GET",status="200"\} (\d+)/;
    const hits = /devutil_proxy_cache_requests_total\{result="hit"\} (\d+)/;
    const usage = async () => {
      const u = await w.proxy.app.ctx.usage!.read('hour');
      return u.buckets.reduce((n, b) => n + b.utility('proxy').requests, 0);
    };
    const r0 = await metric(requests);
    const h0 = await metric(hits);
    const u0 = await usage();
    const l0 = answered();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(String((await get(url, '127.0.0.25')).headers['x-request-id']));
    assert.equal(answered() - l0, 5, 'all five from the lane');
    assert.equal((await metric(requests)) - r0, 5);
    assert.equal((await metric(hits)) - h0, 5, 'each a cache hit');
    assert.equal((await usage()) - u0, 5);
    for (const id of ids) {
      const lines = logs.lines.filter(
        (l) => l.includes(`"reqId":"${id}"`) && l.includes('request completed'),
      );
      assert.equal(lines.length, 1, `one access line for ${id}`);
      assert.equal(JSON.parse(lines[0]!).res.size, OBJECT);
    }
    for (const line of logs.lines) assert.ok(!line.includes(SECRET), `a secret in ${line.slice(0, 300)}`);
    for (const line of logs.lines) assert.ok(!line.includes(ADMIN));
  });

  it('repeats an npm packument (by its Accept) and serves ranges of a tarball', async () => {
    const p = reg.packages[0]!;
    const doc = `${base}/npm/${p.name}`;
    const abbreviated = { accept: 'application/vnd.npm.install-v1+json' };
    const full = await warm(doc, '127.0.0.26');
    const short = await warm(doc, '127.0.0.26', abbreviated);
    const before = answered();
    const fullAgain = await get(doc, '127.0.0.26');
    const shortAgain = await get(doc, '127.0.0.26', abbreviated);
    assert.equal(answered(), before + 2, 'both variants from the lane');
    assert.ok(fullAgain.body.equals(full.body));
    assert.ok(shortAgain.body.equals(short.body));
    assert.deepEqual(stable(shortAgain.headers), stable(short.headers));
    // Asked to revalidate: the router's (it asks upstream).
    await get(doc, '127.0.0.26', { 'cache-control': 'no-cache' });
    assert.equal(answered(), before + 2);

    const tgz = `${base}/npm${p.path}`;
    const whole = await warm(tgz, '127.0.0.26');
    assert.ok(whole.body.equals(p.tarball));
    const l0 = answered();
    const head = await get(tgz, '127.0.0.26', { range: 'bytes=0-1' });
    assert.equal(head.status, 206);
    assert.ok(head.body.equals(p.tarball.subarray(0, 2)));
    const etag = String(whole.headers['etag']);
    const nm = await get(tgz, '127.0.0.26', { 'if-none-match': etag });
    assert.equal(nm.status, 304);
    assert.equal(answered(), l0 + 2);
  });
});

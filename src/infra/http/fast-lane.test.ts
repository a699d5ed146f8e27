// The fast lane keeps every semantic of the router's path for the answers it sends itself: the same
// bytes and headers, the rate limit charged (and its 429 still answered), request ids, metrics,
// admin usage and the access log line, and whatever it cannot answer exactly (a query it does not
// know) is left to the router. Real HTTP over loopback (inject() bypasses the lane); each case
// calls from its own loopback address, so each has a rate-limit window of its own.
import assert from 'node:assert/strict';
import { Agent, IncomingMessage, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { type Answer, getFrom, stableHeaders, startLanePair } from '../../../test/helpers/lane.ts';
import { LogCapture, type Running } from '../../../test/helpers/server.ts';

/** The answer with its body as text. */
async function get(url: string, from: string, headers: Record<string, string> = {}, method = 'GET') {
  const a = await getFrom(url, from, headers, method);
  return { ...a, bytes: a.body, body: a.body.toString('utf8') };
}
const stable = (h: Answer['headers']) => stableHeaders(h);
const LIMIT = 30;
const AVATAR_TOKEN = 'lane-avatar-token-0123456789abcdef';
const MD5 = '0123456789abcdef0123456789abcdef';

describe('the fast lane', { timeout: 120_000 }, () => {
  const logs = new LogCapture();
  let lane: Running;
  let plain: Running | undefined;
  before(async () => {
    const overrides = (fastLane: boolean) => ({
      server: { fastLane },
      ip: { rateLimit: `${LIMIT}/min` },
      avatar: { enabled: true, adminToken: AVATAR_TOKEN, rateLimit: `${LIMIT}/min`, upstream: '' },
      admin: { token: 'lane-admin-token-0123456789abcdef' },
      log: { level: 'info' },
    });
    ({ lane, plain } = await startLanePair(overrides, logs));
  });
  after(async () => {
    await lane?.close();
    await plain?.close();
  });
  const answered = () => lane.app.ctx.lane.answered;

  it('answers the caller-IP routes itself, with the bytes and headers the router sends', async () => {
    const cases = [
      ['/rest/api/v1/ip', {}],
      ['/api/ip', {}],
      ['/rest/api/v1/ip?format=text', {}],
      ['/api/ip', { accept: 'text/plain' }],
      ['/rest/api/v1/ip?format=json', {}],
    ] as const;
    for (const [path, headers] of cases) {
      // Twice: the first of a client's window goes through the router (the lane has no view of it yet).
      for (let i = 0; i < 2; i++) {
        const before = answered();
        const a = await get(`${lane.url}${path}`, '127.0.0.2', headers);
        const b = await get(`${plain!.url}${path}`, '127.0.0.2', headers);
        assert.equal(a.status, 200, `${path}: ${a.body}`);
        assert.equal(a.body, b.body, path);
        assert.match(a.body, /127\.0\.0\.2/);
        assert.deepEqual(stable(a.headers), stable(b.headers), path);
        assert.equal(a.headers['ratelimit-remaining'], b.headers['ratelimit-remaining'], path);
        if (i === 1) assert.equal(answered(), before + 1, `${path} answered by the lane`);
      }
    }
    const head = await get(`${lane.url}/rest/api/v1/ip`, '127.0.0.2', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(
      head.headers['content-length'],
      String('{"status":1,"message":"success","data":{"ip":"127.0.0.2"}}'.length),
    );
  });

  it('charges the route rate limit and leaves the 429 to the router', async () => {
    const before = answered();
    const seen: Awaited<ReturnType<typeof get>>[] = [];
    for (let i = 0; i < LIMIT + 5; i++) seen.push(await get(`${lane.url}/rest/api/v1/ip`, '127.0.0.3'));
    assert.deepEqual(
      seen.map((a) => a.status),
      [...Array(LIMIT).fill(200), ...Array(5).fill(429)],
    );
    assert.deepEqual(
      seen.slice(0, LIMIT).map((a) => Number(a.headers['ratelimit-remaining'])),
      Array.from({ length: LIMIT }, (_, i) => LIMIT - 1 - i),
    );
    assert.ok(seen[LIMIT]!.headers['retry-after'], 'a 429 with Retry-After');
    assert.ok(answered() - before >= LIMIT - 1, `the lane answered ${answered() - before} of ${LIMIT}`);
  });

  it('leaves what it does not know to the router', async () => {
    const before = answered();
    const a = await get(`${lane.url}/rest/api/v1/ip?details=true`, '127.0.0.4');
    const b = await get(`${lane.url}/rest/api/v1/ip?details=true`, '127.0.0.4');
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(JSON.parse(b.body).data.ip, '127.0.0.4');
    const bad = await get(`${lane.url}/rest/api/v1/ip?details=maybe`, '127.0.0.4');
    assert.equal(bad.status, 400);
    assert.equal(answered(), before, 'none of these by the lane');
  });

  it('counts its answers in metrics, admin usage and the access log, with request ids', async () => {
    const metric = async () => {
      const m = await get(`${lane.url}/metrics`, '127.0.0.1');
      const line =
        /devutil_http_requests_total\{svc="ip",route="\/api\/ip",method="GET",status="200"\} (\d+)/.exec(
          m.body,
        );
      return Number(line?.[1] ?? 0);
    };
    const usage = async () => {
      const w = await lane.app.ctx.usage!.read('hour');
      return w.buckets.reduce((n, b) => n + b.utility('ip').requests, 0);
    };
    const m0 = await metric();
    const u0 = await usage();
    const l0 = answered();
    const ids: string[] = [];
    let size = 0;
    for (let i = 0; i < 6; i++) {
      const a = await get(
        `${lane.url}/api/ip`,
        '127.0.0.5',
        i === 5 ? { 'x-request-id': 'caller-chosen-id' } : {},
      );
      assert.equal(a.status, 200);
      ids.push(String(a.headers['x-request-id']));
      size = Buffer.byteLength(a.body);
    }
    assert.ok(answered() - l0 >= 5, 'the lane answered them');
    assert.equal(ids[5], 'caller-chosen-id');
    assert.equal(new Set(ids).size, 6, 'a request id each');
    assert.equal((await metric()) - m0, 6);
    assert.equal((await usage()) - u0, 6);
    for (const id of ids) {
      const lines = logs.lines.filter(
        (l) => l.includes(`"reqId":"${id}"`) && l.includes('request completed'),
      );
      assert.equal(lines.length, 1, `one access line for ${id}`);
      const line = JSON.parse(lines[0]!);
      assert.equal(line.svc, 'ip');
      assert.equal(line.req.url, '/api/ip');
      assert.equal(line.req.remoteAddress, '127.0.0.5');
      assert.equal(line.res.statusCode, 200);
      assert.equal(line.res.size, size, 'the size of the answer');
    }
  });
  it('repeats a cached avatar with its headers, 304s and rate limit, until an upload changes it', async () => {
    const url = `${lane.url}/avatar/${MD5}?s=40&d=identicon`;
    // Rendered, then a memory hit through the router, which the lane remembers; the next one
    // still goes through the router, which counts it in the window the lane then charges.
    assert.equal((await get(url, '127.0.0.6')).status, 200);
    assert.equal((await get(url, '127.0.0.6')).status, 200);
    const first = await get(url, '127.0.0.6');
    assert.equal(first.status, 200);
    const before = answered();
    const again = await get(url, '127.0.0.6');
    assert.equal(answered(), before + 1, 'the repeat came from the lane');
    // Byte for byte: a body goes out from its frame with the head (every byte value, a PNG's too).
    assert.ok(first.bytes.some((b) => b >= 0x80));
    assert.ok(again.bytes.equals(first.bytes), 'the same bytes as the router');
    assert.deepEqual(stable(again.headers), stable(first.headers));
    assert.equal(Number(again.headers['ratelimit-remaining']), LIMIT - 4, 'charged to the avatar budget');
    const etag = String(first.headers['etag']);
    const cond = await get(url, '127.0.0.6', { 'if-none-match': etag });
    assert.equal(cond.status, 304);
    assert.equal(cond.headers['etag'], etag);
    assert.equal(cond.body, '');
    assert.equal(answered(), before + 2, 'the 304 too');
    // A Range is the router's (the lane repeats whole answers only).
    const ranged = await get(url, '127.0.0.6', { range: 'bytes=0-3' });
    assert.equal(answered(), before + 2);
    assert.ok(ranged.status === 200 || ranged.status === 206);
    // An upload for the hash: the next answer is the upload, not the remembered identicon.
    const img = await sharp({ create: { width: 40, height: 40, channels: 3, background: '#f00' } })
      .png()
      .toBuffer();
    const put = await new Promise<number>((resolve, reject) => {
      const r = request(
        `${lane.url}/avatar/${MD5}`,
        {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${AVATAR_TOKEN}`,
            'content-type': 'image/png',
            'content-length': img.length,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      r.on('error', reject);
      r.end(img);
    });
    assert.ok(put === 200 || put === 201, `upload answered ${put}`);
    const after = await get(url, '127.0.0.6');
    assert.equal(after.status, 200);
    assert.equal(after.headers['x-avatar-source'], 'upload');
    assert.notEqual(after.headers['etag'], etag);
  });
  it('repeats a cached diagram, but not to a request with option headers', async () => {
    const src = deflateSync('digraph { lane -> fast }').toString('base64url');
    const url = `${lane.url}/plantuml/graphviz/svg/${src}`;
    const rendered = await get(url, '127.0.0.7');
    assert.equal(rendered.status, 200, rendered.body);
    assert.match(rendered.body, /fast/);
    assert.equal((await get(url, '127.0.0.7')).headers['x-plantuml-cache'], 'hit');
    const before = answered();
    const again = await get(url, '127.0.0.7');
    assert.equal(answered(), before + 1, 'the repeat came from the lane');
    assert.equal(again.body, rendered.body);
    assert.equal(again.headers['x-plantuml-cache'], 'hit');
    assert.equal(again.headers['content-type'], 'image/svg+xml');
    const themed = await get(url, '127.0.0.7', { 'kroki-diagram-options-layout': 'neato' });
    assert.equal(themed.status, 200);
    assert.equal(answered(), before + 1, "an option header is the router's");
  });
});

describe('the fast lane without rate limits', { timeout: 120_000 }, () => {
  let lane: Running;
  let plain: Running | undefined;
  before(async () => {
    const overrides = (fastLane: boolean) => ({ server: { fastLane }, diagrams: { rateLimit: 'off' } });
    ({ lane, plain } = await startLanePair(overrides));
  });
  after(async () => {
    await lane?.close();
    await plain?.close();
  });

  // The lane reuses one header array per remembered answer when there are no rate-limit headers.
  it("repeats 200s and 304s alike with each request's own id and the router's headers", async () => {
    const path = `/plantuml/graphviz/svg/${deflateSync('digraph { reused -> headers }').toString('base64url')}`;
    await get(plain!.url + path, '127.0.0.31');
    const hit = await get(plain!.url + path, '127.0.0.31');
    const etag = String(hit.headers['etag']);
    for (let i = 0; i < 2; i++) await get(lane.url + path, '127.0.0.32');
    const before = lane.app.ctx.lane.answered;
    const ids = new Set<string>();
    let first304: ReturnType<typeof stable> | undefined;
    for (const conditional of [false, false, true, false, true, false]) {
      const a = await get(lane.url + path, '127.0.0.32', conditional ? { 'if-none-match': etag } : {});
      if (conditional) {
        // (The router answers a conditional Kroki GET before it looks the diagram up, with fewer
        // headers: the lane's 304 is the prepared answer's, compared with itself here.)
        assert.equal(a.status, 304);
        assert.equal(a.body, '');
        assert.equal(a.headers['etag'], etag);
        assert.equal(a.headers['content-type'], undefined);
        first304 ??= stable(a.headers);
        assert.deepEqual(stable(a.headers), first304);
      } else {
        assert.equal(a.status, 200);
        assert.deepEqual(stable(a.headers), stable(hit.headers));
        assert.equal(a.body, hit.body);
      }
      assert.ok(Date.parse(String(a.headers['expires'])) > Date.now(), 'an Expires ahead');
      ids.add(String(a.headers['x-request-id']));
    }
    assert.equal(lane.app.ctx.lane.answered - before, 6, 'all six from the lane');
    assert.equal(ids.size, 6, 'each answer has its own request id');
  });

  it('settles a request it answers as Node does an empty one, and the connection serves the next', async () => {
    // Node 26 can mark a request without a body read and closed without its events; the lane does
    // that to requests it answers. A runtime without it leaves them as they were.
    const settles =
      typeof (IncomingMessage.prototype as { _dumpAndCloseReadable?: unknown })._dumpAndCloseReadable ===
      'function';
    const seen: { url: string; ended: boolean }[] = [];
    const watch = (req: IncomingMessage) => seen.push({ url: req.url ?? '', ended: req.readableEnded });
    const server = lane.app.server;
    server.on('request', watch);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const before = lane.app.ctx.lane.answered;
    try {
      const sockets = new Set<unknown>();
      for (const path of ['/rest/api/v1/ip', '/rest/api/v1/ip?format=text', '/healthz', '/rest/api/v1/ip']) {
        const { status, socket } = await new Promise<{ status: number; socket: unknown }>(
          (resolve, reject) => {
            const r = request(`${lane.url}${path}`, { agent, localAddress: '127.0.0.9' }, (res) => {
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: r.socket }));
            });
            r.on('error', reject);
            r.end();
          },
        );
        assert.equal(status, 200, path);
        sockets.add(socket);
      }
      assert.equal(sockets.size, 1, 'one connection for all four');
    } finally {
      server.off('request', watch);
      agent.destroy();
    }
    // Without a rate limit the lane answers all three caller-IP requests; /healthz is the router's.
    assert.equal(lane.app.ctx.lane.answered - before, 3);
    const byLane = seen.filter((s) => s.url.startsWith('/rest/'));
    assert.equal(byLane.length, 3);
    for (const s of byLane) assert.equal(s.ended, settles, s.url);
  });
});

// Proxy cache hits offloaded to real nginx (the offload block of deploy/nginx.conf): one devutil
// with DEVUTIL_PROXY_ACCEL_REDIRECT, one without, both behind the same nginx; what curl gets from
// each must be the same, bytes and headers, for whole objects, ranges, HEAD and 304.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { run } from '../fixtures/proxy/run.ts';
import { startProxy, startWorld, type World } from '../fixtures/proxy/world.ts';
import { type Nginx, offloadLocations, startNginx } from '../helpers/nginx.ts';
import { type Running, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

interface Got {
  status: number;
  /** Every header line of the last response, names lower-cased, in order (duplicates kept). */
  lines: [string, string][];
  headers: Record<string, string>;
  body: Buffer;
}

async function get(url: string, args: string[] = []): Promise<Got> {
  const dir = tempDir('devutil-curl-');
  const [hdr, out] = [join(dir, 'headers'), join(dir, 'body')];
  const r = await run('curl', ['-sS', '-D', hdr, '-o', out, '-w', '%{http_code}', ...args, url]);
  const block =
    readFileSync(hdr, 'latin1')
      .split('\r\n\r\n')
      .filter((b) => b.trim())
      .at(-1) ?? '';
  const lines = block
    .split('\r\n')
    .slice(1)
    .map((l): [string, string] => [
      l.slice(0, l.indexOf(':')).toLowerCase(),
      l.slice(l.indexOf(':') + 1).trim(),
    ]);
  let body = Buffer.alloc(0);
  try {
    body = readFileSync(out);
  } catch {
    // HEAD, 304
  }
  return { status: Number(r.stdout.trim()), lines, headers: Object.fromEntries(lines), body };
}

/** What a client sees, without what differs per request (date, request id). */
const seen = (g: Got) => g.lines.filter(([n]) => n !== 'date' && n !== 'x-request-id').sort();

async function charged(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const series = 'devutil_budget_charged_bytes_total{budget="proxy"} ';
  return Number(
    text
      .split('\n')
      .find((l) => l.startsWith(series))
      ?.slice(series.length) ?? 0,
  );
}

const PREFIX = '/_devutil_proxy_cache/';
const ETAG = '"obj-1"';
const LAST_MODIFIED = 'Tue, 01 Sep 2026 10:00:00 GMT';

describe('proxy cache hits offloaded to nginx (X-Accel-Redirect)', {
  skip: toolSkip('nginx', ['-v']),
}, () => {
  let w: World;
  let plain: Running;
  let nginx: Nginx;
  let dataDir: string;
  const obj = randomBytes(3 * 1024 * 1024 + 5);
  let release = Buffer.from('Origin: Debian\nVersion: 1\n'.repeat(200));
  let releaseTag = '"rel-1"';
  const OBJ = '/proxy/files.pythonhosted.org/packages/aa/obj.bin';
  const UNTYPED = '/proxy/files.pythonhosted.org/packages/aa/untyped.bin';
  const REL = '/proxy/deb.debian.org/debian/dists/stable/Release';

  before(async () => {
    dataDir = tempDir();
    // nginx's workers run as another user: like a deployment, they need read access to the cache.
    chmodSync(dataDir, 0o755);
    // No memory tier: every hit is a disk hit, which is what is offloaded.
    const proxy = { cacheMemoryBytes: 0, rateLimit: 'off' };
    w = await startWorld({
      git: false,
      overrides: { server: { dataDir }, proxy: { ...proxy, accelRedirect: PREFIX } },
    });
    plain = await startProxy(w.net, { proxy });
    w.net.on('files.pythonhosted.org', (_req, res, url) => {
      res.writeHead(200, {
        // An upstream may name no type: through nginx there must be none either.
        ...(url.pathname.endsWith('untyped.bin') ? {} : { 'content-type': 'application/octet-stream' }),
        'content-length': obj.length,
        'content-disposition': 'attachment; filename="obj.bin"',
        'cache-control': 'public, max-age=365000000, immutable',
        vary: 'Accept-Encoding',
        etag: ETAG,
        'last-modified': LAST_MODIFIED,
      });
      res.end(obj);
    });
    w.net.on('deb.debian.org', (req, res) => {
      if (req.headers['if-none-match'] === releaseTag)
        return void res.writeHead(304, { etag: releaseTag }).end();
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': release.length,
        etag: releaseTag,
      });
      res.end(release);
    });
    const upstreams = `upstream devutil { server 127.0.0.1:${w.proxy.port}; keepalive 8; }
      upstream plain { server 127.0.0.1:${plain.port}; keepalive 8; }`;
    const pass = `proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host; proxy_buffering off;`;
    nginx = await startNginx(
      `${offloadLocations(dataDir)}
    location /plain/ { proxy_pass http://plain/; ${pass} }
    location / { proxy_pass http://devutil; ${pass} }`,
      upstreams,
      { readyPath: '/healthz' },
    );
    // Fill both caches.
    for (const base of [nginx.url, `${nginx.url}/plain`])
      for (const path of [OBJ, UNTYPED]) {
        const first = await get(`${base}${path}`);
        assert.equal(first.status, 200, nginx.errors());
        assert.equal(first.headers['x-cache'], undefined, 'a miss');
        assert.ok(first.body.equals(obj));
      }
  });
  after(async () => {
    await nginx?.close();
    await plain?.close();
    await w?.close();
  });

  it('answers a disk hit with X-Accel-Redirect to a body file that holds exactly the object', async () => {
    const direct = await get(`${w.proxy.url}${OBJ}`);
    assert.equal(direct.status, 200);
    assert.equal(direct.body.length, 0, 'devutil sends no body');
    const location = direct.headers['x-accel-redirect'] ?? '';
    assert.match(location, /^\/_devutil_proxy_cache\/[0-9a-f]{2}\/[0-9a-f]{64}\.[0-9a-f]{16}$/);
    const file = join(dataDir, 'proxy-cache', location.slice(PREFIX.length));
    assert.ok(readFileSync(file).equals(obj), 'the body file is the object, nothing more');
    assert.equal(direct.headers['x-cache'], 'HIT');
  });

  it('sends through nginx the same bytes and headers as devutil without offload', async () => {
    const before = await charged(w.proxy.url);
    const off = await get(`${nginx.url}${OBJ}`);
    const own = await get(`${nginx.url}/plain${OBJ}`);
    assert.equal(off.status, 200, nginx.errors());
    assert.ok(off.body.equals(obj), 'byte-identical');
    assert.equal(off.headers['x-accel-redirect'], undefined, 'nginx keeps the internal path to itself');
    assert.deepEqual(seen(off), seen(own));
    const expected: [string, string][] = [
      ['etag', ETAG],
      ['last-modified', LAST_MODIFIED],
      ['content-length', String(obj.length)],
      ['x-cache', 'HIT'],
      ['accept-ranges', 'bytes'],
    ];
    for (const [name, value] of expected) assert.equal(off.headers[name], value, name);
    assert.equal(await charged(w.proxy.url), before + obj.length, 'the client budget is charged');
    const untyped = await get(`${nginx.url}${UNTYPED}`);
    assert.ok(untyped.body.equals(obj));
    assert.equal(untyped.headers['x-cache'], 'HIT');
    assert.equal(untyped.headers['content-type'], undefined);
    assert.deepEqual(seen(untyped), seen(await get(`${nginx.url}/plain${UNTYPED}`)));
  });

  it('cuts ranges like devutil does, If-Range with devutil`s validators included', async () => {
    const before = await charged(w.proxy.url);
    const cases: [string, string[]][] = [
      ['a range', ['-r', '1000-200999']],
      ['an open range', ['-r', `${obj.length - 10}-`]],
      ['a suffix range', ['-r', '-100']],
      ['a range past the end', ['-r', `${obj.length - 5}-${obj.length + 100}`]],
      ['If-Range with the ETag', ['-r', '0-9', '-H', `If-Range: ${ETAG}`]],
      ['If-Range with the date', ['-r', '0-9', '-H', `If-Range: ${LAST_MODIFIED}`]],
      ['a stale If-Range', ['-r', '0-9', '-H', 'If-Range: "other"']],
      ['several ranges', ['-r', '0-9,20-29']],
      ['an unsatisfiable range', ['-r', `${obj.length + 1}-`]],
    ];
    for (const [what, args] of cases) {
      const off = await get(`${nginx.url}${OBJ}`, args);
      const own = await get(`${nginx.url}/plain${OBJ}`, args);
      assert.equal(off.status, own.status, `${what}: status`);
      assert.deepEqual(seen(off), seen(own), `${what}: headers`);
      assert.ok(off.body.equals(own.body), `${what}: bytes`);
    }
    const part = await get(`${nginx.url}${OBJ}`, ['-r', '1000-200999']);
    assert.equal(part.status, 206);
    assert.equal(part.headers['content-range'], `bytes 1000-200999/${obj.length}`);
    assert.ok(part.body.equals(obj.subarray(1000, 201000)));
    // Each offloaded range is charged its own length (the cases, then `part`); the whole answers
    // (stale If-Range, several ranges) come from devutil itself and are metered as sent.
    const ranges = 200_000 + 10 + 100 + 5 + 10 + 10 + 200_000;
    assert.equal(await charged(w.proxy.url), before + ranges + 2 * obj.length);
  });

  it('answers HEAD and conditional requests itself, as without offload', async () => {
    const cases: [string, string[]][] = [
      ['HEAD', ['-I']],
      ['If-None-Match', ['-H', `If-None-Match: ${ETAG}`]],
      ['If-Modified-Since', ['-H', `If-Modified-Since: ${LAST_MODIFIED}`]],
    ];
    for (const [what, args] of cases) {
      const direct = await get(`${w.proxy.url}${OBJ}`, args);
      assert.equal(direct.headers['x-accel-redirect'], undefined, `${what}: not offloaded`);
      const off = await get(`${nginx.url}${OBJ}`, args);
      const own = await get(`${nginx.url}/plain${OBJ}`, args);
      assert.equal(off.status, what === 'HEAD' ? 200 : 304, what);
      assert.equal(off.status, own.status, what);
      assert.deepEqual(seen(off), seen(own), `${what}: headers`);
    }
  });

  it('refuses the internal location to clients with 404', async () => {
    const location = (await get(`${w.proxy.url}${OBJ}`)).headers['x-accel-redirect'] ?? '';
    assert.ok(location);
    const got = await get(`${nginx.url}${location}`);
    assert.equal(got.status, 404);
    assert.ok(!got.body.equals(obj));
    assert.equal((await get(`${nginx.url}${PREFIX}`)).status, 404);
    assert.equal((await get(`${nginx.url}${PREFIX}tmp/`)).status, 404);
  });

  it('serves the new bytes once an entry is replaced, from a new body file', async () => {
    const first = await get(`${nginx.url}${REL}`);
    assert.equal(first.status, 200, nginx.errors());
    assert.ok(first.body.equals(release));
    const hit = await get(`${w.proxy.url}${REL}`);
    const oldLocation = hit.headers['x-accel-redirect'] ?? '';
    assert.ok(oldLocation, 'a hit, offloaded');
    assert.ok((await get(`${nginx.url}${REL}`)).body.equals(release));

    release = Buffer.from('Origin: Debian\nVersion: 2\n'.repeat(300));
    releaseTag = '"rel-2"';
    // A client that insists (apt update does) makes the proxy revalidate: the upstream has changed.
    const forced = await get(`${nginx.url}${REL}`, ['-H', 'Cache-Control: no-cache']);
    assert.equal(forced.status, 200);
    assert.ok(forced.body.equals(release));
    const again = await get(`${nginx.url}${REL}`);
    assert.equal(again.headers['x-cache'], 'HIT');
    assert.equal(again.headers['etag'], '"rel-2"');
    assert.ok(again.body.equals(release), 'nginx sends the new version');
    const newLocation = (await get(`${w.proxy.url}${REL}`)).headers['x-accel-redirect'] ?? '';
    assert.ok(newLocation && newLocation !== oldLocation, 'a new body file, never the old one rewritten');
    // The old body file stays a moment for an nginx told to send it just before the replacement.
    const old = join(dataDir, 'proxy-cache', oldLocation.slice(PREFIX.length));
    assert.ok(readFileSync(old).equals(Buffer.from('Origin: Debian\nVersion: 1\n'.repeat(200))));
  });
});

// GitHub-style downloads through the proxy with curl and wget, plus the response/redirect
// security table (docs/protocols/reverse-proxy.md §4, §5.3, §8.3, §8.7, §8.8).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { SIG } from '../fixtures/proxy/github.ts';
import { ok } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { LogCapture, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

/** Sends raw bytes and collects everything the server answers until it closes or goes quiet. */
function rawHttp(port: number, payload: string, quietMs = 800): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      s.destroy();
      resolve(out);
    };
    s.on('data', (c) => {
      out += c.toString('latin1');
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    });
    s.on('end', done);
    s.on('error', reject);
    s.write(payload);
  });
}

describe('proxy: downloads and security', { skip: toolSkip('curl') || toolSkip('wget') }, () => {
  let w: World;
  const logs = new LogCapture();
  before(async () => {
    w = await startWorld({ logs, git: false, extraResolve: ['media.githubusercontent.com=10.0.0.1:443'] });
  });
  after(async () => {
    await w?.close();
  });
  const asset = () => `${w.base}/github.com/o/r/releases/download/v1/asset.bin`;

  it('follows the release redirect chain to signed storage for curl without -L, dropping Authorization', async () => {
    const r = await curl(['-H', 'Authorization: Bearer client-token', asset()]);
    assert.equal(r.status, 200);
    assert.ok(r.body.equals(w.asset));
    assert.equal(r.headers['content-disposition'], 'attachment; filename=asset.bin');
    const storage = w.net.seen.filter((s) => s.host === 'release-assets.githubusercontent.com');
    assert.ok(storage.length > 0 && storage.every((s) => s.headers.authorization === undefined));
    assert.equal(r.headers['set-cookie'], undefined);
    assert.ok(!logs.text().includes(SIG), 'signed query strings never reach the logs');
    assert.ok(!logs.text().includes('client-token'));
  });

  it('serves releases/latest/download through two redirects', async () => {
    const r = await curl([`${w.base}/github.com/o/r/releases/latest/download/asset.bin`]);
    assert.equal(r.status, 200);
    assert.ok(r.body.equals(w.asset));
  });

  it('answers HEAD with Content-Length', async () => {
    const r = await curl(['-I', asset()]);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-length'], String(w.asset.length));
    assert.equal(r.headers['accept-ranges'], 'bytes');
  });

  it('answers a Range request with 206', async () => {
    const r = await curl(['-r', '1000-1999', asset()]);
    assert.equal(r.status, 206);
    assert.equal(r.headers['content-range'], `bytes 1000-1999/${w.asset.length}`);
    assert.ok(r.body.equals(w.asset.subarray(1000, 2000)));
  });

  it('passes 416 for a range past the end through unchanged', async () => {
    const r = await curl(['-r', '999999999-', asset()]);
    assert.equal(r.status, 416);
    assert.equal(r.headers['content-range'], `bytes */${w.asset.length}`);
  });

  it('resumes with curl -C -', async () => {
    const file = join(tempDir('devutil-dl-'), 'a.bin');
    writeFileSync(file, w.asset.subarray(0, 12345));
    const r = await curl(['-C', '-', asset()], { file });
    assert.equal(r.status, 206);
    assert.ok(r.body.equals(w.asset));
  });

  it('resumes with wget -c', async () => {
    const dir = tempDir('devutil-dl-');
    const file = join(dir, 'asset.bin');
    writeFileSync(file, w.asset.subarray(0, 50_000));
    await ok('wget', ['-q', '-c', '-O', file, asset()], { cwd: dir });
    const before = w.net.seen.filter((s) => s.headers.range === 'bytes=50000-');
    assert.ok(before.length > 0, 'wget asked for the rest only');
    const { readFileSync } = await import('node:fs');
    assert.ok(readFileSync(file).equals(w.asset));
  });

  it('serves archive (via codeload), raw, blob-as-raw and raw.githubusercontent.com', async () => {
    const a = await curl([`${w.base}/github.com/o/r/archive/refs/tags/v1.tar.gz`]);
    assert.equal(a.status, 200);
    assert.ok(a.body.equals(w.asset));
    const raw = await curl([`${w.base}/github.com/o/r/raw/main/README.md`]);
    assert.equal(raw.body.toString(), 'raw readme\n');
    const blob = await curl([`${w.base}/github.com/o/r/blob/main/README.md`]);
    assert.equal(blob.body.toString(), 'raw readme\n');
    const ruc = await curl([`${w.base}/raw.githubusercontent.com/o/r/main/README.md`]);
    assert.equal(ruc.body.toString(), 'raw readme\n');
  });

  it('strips Set-Cookie, HSTS, Alt-Svc and upstream CSP and adds its own safety headers', async () => {
    const r = await curl([`${w.base}/github.com/o/r/raw/main/README.md`]);
    for (const h of ['set-cookie', 'strict-transport-security', 'alt-svc'])
      assert.equal(r.headers[h], undefined, h);
    assert.equal(r.headers['content-security-policy'], "sandbox; default-src 'none'");
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['x-robots-tag'], 'noindex');
    assert.equal(r.headers['access-control-allow-origin'], '*');
  });

  const refused: [string, string, number, RegExp][] = [
    ['an HTML page from github.com (200 becomes 403)', '/github.com/o/r/raw/main/page', 403, /not served/],
    ['an HTML 404 from github.com (stays 404, text)', '/github.com/o/r/raw/main/missing', 404, /withheld/],
    ['a redirect to a non-allowed host', '/github.com/o/r/releases/download/bad/offlist', 502, /non-allowed/],
    ['a redirect to an IP literal', '/github.com/o/r/releases/download/bad/loopback', 502, /non-allowed/],
    ['a redirect to http://', '/github.com/o/r/releases/download/bad/http', 502, /non-allowed/],
    ['a redirect loop past 5 hops', '/github.com/o/r/releases/download/loop/1', 502, /too many redirects/],
    [
      'an allow-listed name that resolves to 10.0.0.1',
      '/media.githubusercontent.com/x',
      403,
      /address is not allowed: .*10\.0\.0\.1/,
    ],
    [
      'a gravatar d= redirect off the list',
      '/secure.gravatar.com/avatar/00000000000000000000000000000000?d=https%3A%2F%2Fevil.example%2Fa.png',
      502,
      /non-allowed/,
    ],
    ['a host off the list', '/example.com/x', 403, /not allowed/],
    ['userinfo in the target', '/github.com@evil.com/x', 400, /invalid/],
    ['an encoded dot in the host', '/github%2Ecom/o/r/raw/main/README.md', 400, /invalid/],
    [
      'dot segments out of the release path',
      '/github.com/o/r/releases/download/%2e%2e/%2e%2e/login',
      403,
      /path not allowed/,
    ],
  ];
  for (const [name, path, status, reason] of refused) {
    it(`refuses ${name} with ${status}`, async () => {
      const r = await curl(['--path-as-is', `${w.base}${path}`]);
      assert.equal(r.status, status);
      assert.match(r.headers['content-type'] ?? '', /^text\/plain/);
      assert.match(r.body.toString(), reason);
      assert.equal(r.body.toString().split('\n').filter(Boolean).length, 1, 'one line');
      assert.ok(!r.body.toString().includes('<html'), 'no upstream HTML relayed');
    });
  }

  it('serves gravatar GET and HEAD, and refuses POST with 405', async () => {
    const g = await curl([`${w.base}/secure.gravatar.com/avatar/abc?s=80`]);
    assert.equal(g.status, 200);
    assert.equal(g.headers['content-type'], 'image/png');
    const h = await curl(['-I', `${w.base}/secure.gravatar.com/avatar/abc`]);
    assert.equal(h.status, 200);
    const p = await curl(['-X', 'POST', '-d', 'x', `${w.base}/secure.gravatar.com/avatar/abc`]);
    assert.equal(p.status, 405);
  });

  it('answers CORS preflight locally', async () => {
    const r = await curl(['-X', 'OPTIONS', `${w.base}/github.com/o/r/raw/main/README.md`]);
    assert.equal(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], '*');
    assert.equal(r.headers['access-control-allow-credentials'], undefined);
  });

  it('refuses a request with both Content-Length and Transfer-Encoding (400)', async () => {
    const out = await rawHttp(
      w.proxy.port,
      'POST /proxy/github.com/o/tiny/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    assert.match(out, /^HTTP\/1\.1 400/);
  });

  it('answers pipelined GETs in order', async () => {
    const paths = [
      '/proxy/raw.githubusercontent.com/o/r/main/README.md',
      '/proxy/github.com/o/r/raw/main/missing',
      '/proxy/robots.txt',
    ];
    const out = await rawHttp(
      w.proxy.port,
      paths.map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''),
    );
    const statuses = [...out.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => Number(m[1]));
    assert.deepEqual(statuses, [200, 404, 200]);
  });

  it('serves robots.txt that disallows everything', async () => {
    const r = await curl([`${w.base}/robots.txt`]);
    assert.equal(r.body.toString(), 'User-agent: *\nDisallow: /\n');
  });
});

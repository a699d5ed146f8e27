// Limits and access controls of private deployments (docs/protocols/reverse-proxy.md §6): response and
// request caps, per-IP rate limit, client CIDR allow-list, the secret path prefix and the proxy's own host.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { startProxy, startWorld, type World } from '../fixtures/proxy/world.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { type Running, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

registerSecret('s3cretPrefix');

describe('proxy: limits and access control', { skip: toolSkip('curl') }, () => {
  let w: World;
  let capped: Running;
  let limited: Running;
  let privateProxy: Running;
  let closed: Running;
  let single: Running;
  let held = 0;
  let release: () => void = () => {};
  let hold: Promise<void> = Promise.resolve();
  before(async () => {
    w = await startWorld({ git: false });
    capped = await startProxy(w.net, { proxy: { maxResponseBytes: 5000, maxRequestBytes: 1000 } });
    limited = await startProxy(w.net, { proxy: { rateLimit: '3/min' } });
    privateProxy = await startProxy(w.net, { proxy: { secret: 's3cretPrefix', host: 'proxy.test' } });
    closed = await startProxy(w.net, { proxy: { clients: ['10.0.0.0/8'] } });
    single = await startProxy(w.net, { proxy: { maxConcurrent: 1 } });
    // Held open until the test lets it go, so that two requests overlap on the proxy whatever the
    // machine's load (a fixed delay let the second start after the first had ended).
    w.net.on('media.githubusercontent.com', async (_req, res) => {
      held++;
      await hold;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('slow\n');
    });
  });
  after(async () => {
    await Promise.all([capped, limited, privateProxy, closed, single].map((s) => s?.close()));
    await w?.close();
  });

  it('answers 413 when Content-Length is over the response cap', async () => {
    const r = await curl([`${capped.url}/proxy/github.com/o/r/releases/download/v1/asset.bin`]);
    assert.equal(r.status, 413);
    assert.match(r.body.toString(), /exceeds 4\.88 KiB \(5000 bytes\)/);
  });

  it('aborts a chunked response once it passes the cap', async () => {
    const r = await curl([`${capped.url}/proxy/github.com/o/r/raw/main/chunked`]);
    assert.notEqual(r.exit, 0, 'the transfer is cut short');
    assert.ok(r.body.length <= 5000);
  });

  it('answers 413 for a request body over the cap', async () => {
    const r = await curl([
      '-H',
      'Content-Type: application/x-git-upload-pack-request',
      '--data-binary',
      'x'.repeat(2000),
      `${capped.url}/proxy/github.com/o/tiny/git-upload-pack`,
    ]);
    assert.equal(r.status, 413);
  });

  it('refuses a chunked request body once it passes the cap', async () => {
    const file = join(tempDir('devutil-body-'), 'body');
    writeFileSync(file, 'x'.repeat(200_000));
    const r = await curl([
      '-H',
      'Content-Type: application/x-git-upload-pack-request',
      '-H',
      'Transfer-Encoding: chunked',
      '--data-binary',
      `@${file}`,
      `${capped.url}/proxy/github.com/o/tiny/git-upload-pack`,
    ]);
    // 413, or the upload is cut off while curl is still sending.
    assert.ok(r.status === 413 || r.exit !== 0, `status ${r.status}, exit ${r.exit}`);
    assert.notEqual(r.status, 200);
  });

  it('answers 429 with Retry-After past the per-IP rate', async () => {
    const url = `${limited.url}/proxy/raw.githubusercontent.com/o/r/main/README.md`;
    const statuses: number[] = [];
    let last = await curl([url]);
    statuses.push(last.status);
    for (let i = 0; i < 3; i++) {
      last = await curl([url]);
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.ok(Number(last.headers['retry-after']) >= 1);
  });

  it('requires the secret prefix and rewrites links with it', async () => {
    const usage = await curl([`${privateProxy.url}/proxy/`]);
    assert.equal(usage.status, 200);
    assert.ok(
      !usage.body.toString().includes('s3cretPrefix'),
      'the open usage page does not reveal the secret',
    );
    const plain = await curl([`${privateProxy.url}/proxy/raw.githubusercontent.com/o/r/main/README.md`]);
    assert.equal(plain.status, 403);
    const wrong = await curl([
      `${privateProxy.url}/proxy/t/wrongwrong/raw.githubusercontent.com/o/r/main/README.md`,
    ]);
    assert.equal(wrong.status, 403);
    const good = await curl([
      `${privateProxy.url}/proxy/t/s3cretPrefix/raw.githubusercontent.com/o/r/main/README.md`,
    ]);
    assert.equal(good.status, 200);
    assert.equal(good.body.toString(), 'raw readme\n');
    const moved = await curl([
      `${privateProxy.url}/proxy/t/s3cretPrefix/github.com/o/old-name/info/refs?service=git-upload-pack`,
    ]);
    assert.equal(moved.status, 301);
    assert.equal(
      moved.headers['location'],
      'http://proxy.test/t/s3cretPrefix/github.com/o/tiny.git/info/refs?service=git-upload-pack',
    );
  });

  it('serves the proxy at the root of its own host', async () => {
    const r = await curl([
      '-H',
      'Host: proxy.test',
      `${privateProxy.url}/t/s3cretPrefix/raw.githubusercontent.com/o/r/main/README.md`,
    ]);
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'raw readme\n');
  });

  it('refuses clients outside the CIDR allow-list', async () => {
    const r = await curl([`${closed.url}/proxy/raw.githubusercontent.com/o/r/main/README.md`]);
    assert.equal(r.status, 403);
    assert.match(r.body.toString(), /not open to your address/);
  });

  it('answers 429 past the per-IP concurrent stream limit', async () => {
    const url = `${single.url}/proxy/media.githubusercontent.com/slow`;
    hold = new Promise((r) => {
      release = r;
    });
    const first = curl([url]);
    for (let i = 0; i < 600 && held === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(held, 1, 'the first request reached the upstream and holds its slot');
    const second = await curl([url]);
    assert.equal(second.status, 429);
    release();
    assert.equal((await first).status, 200);
    assert.equal((await curl([url])).status, 200, 'the slot is released afterwards');
  });
});

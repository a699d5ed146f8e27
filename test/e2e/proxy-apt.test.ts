// apt through the proxy against a fake Debian mirror (docs/protocols/reverse-proxy.md §5.4, §8.5): update
// twice (Hit:), by-hash, a resumed -d install (Range + If-Range), and a second download served from the
// cache.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { aptConfig, DEB, DEB_PATH, type FakeDebian, installDebian } from '../fixtures/proxy/debian.ts';
import { ok } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

describe('proxy: apt', { skip: toolSkip('apt-get') || toolSkip('dpkg-scanpackages', ['--version']) }, () => {
  let w: World;
  let deb: FakeDebian;
  let aptEnv: Record<string, string>;
  let dir: string;
  before(async () => {
    const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
    w = await startWorld({ git: false });
    deb = installDebian(w.net, w.dir, arch);
    dir = tempDir('devutil-apt-');
    aptEnv = {
      APT_CONFIG: aptConfig(dir, `deb [trusted=yes] ${w.base}/deb.debian.org/debian bookworm main`, arch),
    };
  });
  after(async () => {
    await w?.close();
  });
  const apt = (...args: string[]) => ok('apt-get', ['-q', ...args], { env: aptEnv, timeoutMs: 90_000 });
  const archived = () => join(dir, 'cache/archives', DEB);
  const debGets = () => w.net.seen.filter((s) => s.url === DEB_PATH && s.method === 'GET');

  it('runs apt-get update twice; the second run is all Hit:', async () => {
    const first = await apt('update');
    assert.match(first.stdout, /Get:\d+ \S+ bookworm Release/);
    const byHash = w.net.seen.filter((s) => s.url.includes('/by-hash/SHA256/'));
    assert.ok(byHash.length > 0, 'apt fetched the index by hash');
    const second = await apt('update');
    assert.match(second.stdout, /Hit:\d+ \S+ bookworm Release/);
    assert.doesNotMatch(second.stdout, /Get:\d+ .*Packages/);
  });

  it('resumes a partial -d install with Range and If-Range', async () => {
    writeFileSync(join(dir, 'cache/archives/partial', DEB), deb.deb.subarray(0, 100_000));
    await apt('-y', '-d', 'install', 'devutil-hello');
    assert.ok(readFileSync(archived()).equals(deb.deb));
    const resumed = debGets().find((s) => s.headers.range === 'bytes=100000-');
    assert.ok(resumed, 'the fixture saw the Range request');
    assert.ok(resumed.headers['if-range'], 'with If-Range');
  });

  it('downloads in full, then serves a second download from the cache', async () => {
    rmSync(archived());
    await apt('-y', '-d', 'install', 'devutil-hello');
    assert.ok(readFileSync(archived()).equals(deb.deb));
    const fetched = debGets().length;
    rmSync(archived());
    await apt('-y', '-d', 'install', 'devutil-hello');
    assert.ok(readFileSync(archived()).equals(deb.deb));
    assert.equal(debGets().length, fetched, 'no new upstream GET for the .deb');
  });

  it('serves the stored Release when the mirror is unreachable during revalidation', async () => {
    const mirror = w.net.handler('deb.debian.org');
    w.net.on('deb.debian.org', (req) => {
      req.socket.destroy();
    });
    try {
      const r = await curl([
        '-H',
        'Cache-Control: max-age=0',
        `${w.base}/deb.debian.org/debian/dists/bookworm/Release`,
      ]);
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-cache'], 'HIT');
      assert.match(r.body.toString(), /^Origin: devutil/);
    } finally {
      if (mirror) w.net.on('deb.debian.org', mirror);
    }
  });
});

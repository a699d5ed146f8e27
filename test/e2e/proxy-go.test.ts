// Debian's go command through the go mount: `go mod download` fetches a module from a fake
// proxy.golang.org and verifies it against a fake sum.golang.org (signed tree notes, hash tiles)
// reached only through the proxy's /sumdb/ pass-through; a database that disagrees with the module
// fails the download; a second download comes from the proxy's cache.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import {
  type FakeGo,
  GO_MODULE,
  GO_MODULE_ESCAPED,
  GO_VERSION,
  installGo,
} from '../fixtures/proxy/goproxy.ts';
import { run } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

describe('proxy: Go modules mount', { skip: toolSkip('go', ['version']), timeout: 240_000 }, () => {
  let w: World;
  let fake: FakeGo;
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { ecosystems: ['go'] } } });
    fake = installGo(w.net);
  });
  after(() => w?.close());

  /** `go mod download -json` in a fresh module cache; GOSUMDB trusts the fake database's key. */
  async function download() {
    const dir = tempDir('devutil-go-');
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'go.mod'), 'module example.com/scratch\n\ngo 1.19\n');
    const env = {
      HOME: dir,
      GOPATH: join(dir, 'gopath'),
      GOMODCACHE: join(dir, 'gopath', 'pkg', 'mod'),
      GOCACHE: join(dir, 'gocache'),
      GOENV: 'off',
      GOFLAGS: '-modcacherw',
      GO111MODULE: 'on',
      GOPROXY: `${w.base}/go`,
      GOSUMDB: fake.verifierKey,
      GONOSUMDB: '',
      GONOSUMCHECK: '',
      GOPRIVATE: '',
      GOTOOLCHAIN: 'local',
    };
    const r = await run('go', ['mod', 'download', '-json', `${GO_MODULE}@${GO_VERSION}`], {
      cwd: project,
      env,
      timeoutMs: 120_000,
    });
    return { ...r, gopath: env.GOPATH };
  }

  const seen = (host: string, suffix: string) =>
    w.net.seen.filter((s) => s.host === host && s.url.endsWith(suffix)).length;

  it('downloads a module and verifies it against the checksum database, both through the proxy', async () => {
    const r = await download();
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const info = JSON.parse(r.stdout) as { Version: string; Zip: string; Sum: string; GoModSum: string };
    assert.equal(info.Version, GO_VERSION);
    assert.ok(readFileSync(info.Zip).equals(fake.zip));
    assert.match(info.Sum, /^h1:/);
    // go asked the database through the proxy (lookup + tile) and kept its signed tree.
    assert.equal(seen('sum.golang.org', `/lookup/${GO_MODULE_ESCAPED}@${GO_VERSION}`), 1);
    assert.ok(seen('sum.golang.org', '/tile/8/0/000.p/3') >= 1);
    const latest = readFileSync(join(r.gopath, 'pkg', 'sumdb', 'sum.golang.org', 'latest'), 'utf8');
    assert.match(latest, /^go\.sum database tree\n3\n/);
    assert.equal(seen('proxy.golang.org', `/${GO_MODULE_ESCAPED}/@v/${GO_VERSION}.zip`), 1);
  });

  it('serves the second download of the zip and go.mod from its cache', async () => {
    const zips = seen('proxy.golang.org', '.zip');
    const mods = seen('proxy.golang.org', '.mod');
    const r = await download();
    assert.equal(r.code, 0, r.stderr);
    assert.equal(seen('proxy.golang.org', '.zip'), zips);
    assert.equal(seen('proxy.golang.org', '.mod'), mods);
  });

  it('fails the download when the checksum database disagrees with the module', async () => {
    fake.lie = true;
    try {
      const r = await download();
      assert.notEqual(r.code, 0);
      assert.match(r.stderr + r.stdout, /SECURITY ERROR|checksum mismatch/);
    } finally {
      fake.lie = false;
    }
  });

  it('answers in plain text as module proxies do', async () => {
    const miss = await curl([`${w.base}/go/example.org/missing/@v/list`]);
    assert.equal(miss.status, 404);
    assert.match(miss.headers['content-type'] ?? '', /^text\/plain/);
    const bad = await curl(['--path-as-is', `${w.base}/go/golang.org/x/../../@v/list`]);
    assert.equal(bad.status, 400);
    assert.match(bad.body.toString(), /^invalid module path\n$/);
  });

  it('refuses a version the go command never sends (v1.0.0.) before any upstream request', async () => {
    const before = w.net.seen.length;
    for (const v of ['v1.0.0.', '.', 'con']) {
      const r = await curl([`${w.base}/go/${GO_MODULE_ESCAPED}/@v/${v}.info`]);
      assert.equal(r.status, 400, v);
      assert.equal(r.body.toString(), `invalid version: ${v}\n`);
    }
    assert.equal(w.net.seen.length, before, 'nothing was asked upstream');
  });
});

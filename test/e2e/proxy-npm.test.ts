// npm through the npm mount against a fake registry.npmjs.org: `npm install --registry` installs a
// scoped and an unscoped package with their dependency, every tarball fetched through the proxy
// (and, the second time, from its cache); abbreviated metadata; the registry's error shape.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { type FakeNpm, installNpm } from '../fixtures/proxy/npm.ts';
import { ok } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

/** The child npm sees none of the npm_* settings `npm test` exported to this process. */
function npmEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  return { ...env, HOME: home, NPM_CONFIG_UPDATE_NOTIFIER: 'false' };
}

describe('proxy: npm registry mount', { skip: toolSkip('npm'), timeout: 180_000 }, () => {
  let w: World;
  let reg: FakeNpm;
  before(async () => {
    w = await startWorld({
      git: false,
      overrides: { proxy: { ecosystems: ['npm'], maxRewriteBytes: 2 * 1024 * 1024 } },
    });
    reg = installNpm(w.net);
  });
  after(() => w?.close());

  const tarballFetches = () =>
    w.net.seen.filter((s) => s.host === 'registry.npmjs.org' && s.url.endsWith('.tgz')).length;

  async function install(): Promise<string> {
    const dir = tempDir('devutil-npm-');
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{"name":"scratch","version":"1.0.0","private":true}\n');
    writeFileSync(join(dir, 'npmrc'), '');
    await ok(
      'npm',
      [
        'install',
        '--registry',
        `${w.base}/npm/`,
        '--userconfig',
        join(dir, 'npmrc'),
        '--cache',
        join(dir, 'cache'),
        '--no-audit',
        '--no-fund',
        'devutil-unscoped',
        '@devutil/scoped',
      ],
      { cwd: project, env: npmEnv(dir), timeoutMs: 120_000 },
    );
    return project;
  }

  it('installs a scoped and an unscoped package with their dependency, tarballs through the proxy', async () => {
    const project = await install();
    const mod = (p: string) => readFileSync(join(project, 'node_modules', p, 'index.js'), 'utf8');
    assert.match(mod('devutil-unscoped'), /devutil-unscoped@1\.0\.0/);
    assert.match(mod('@devutil/scoped'), /@devutil\/scoped@2\.0\.0/);
    assert.match(mod('devutil-dep'), /devutil-dep@1\.2\.0/);
    // The fake registry is reachable only through the proxy: each tarball was fetched there, once.
    for (const p of reg.packages)
      assert.equal(
        w.net.seen.filter((s) => s.host === 'registry.npmjs.org' && s.url === p.path).length,
        1,
        p.path,
      );
    // npm 11 asks for full packuments (Accept: application/json); pnpm and yarn ask for abbreviated
    // ones, which the curl test below checks.
  });

  it('serves the tarballs of a second install from its cache', async () => {
    const before = tarballFetches();
    const project = await install();
    assert.ok(existsSync(join(project, 'node_modules', '@devutil', 'scoped', 'package.json')));
    assert.equal(tarballFetches(), before, 'no tarball fetched upstream again');
  });

  it('answers abbreviated metadata with tarball URLs on the proxy', async () => {
    const r = await curl([
      '-H',
      'Accept: application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*',
      `${w.base}/npm/@devutil%2fscoped`,
    ]);
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'] ?? '', /^application\/vnd\.npm\.install-v1\+json/);
    const doc = JSON.parse(r.body.toString()) as { versions: Record<string, { dist: { tarball: string } }> };
    assert.equal(doc.versions['2.0.0']?.dist.tarball, `${w.base}/npm/@devutil/scoped/-/scoped-2.0.0.tgz`);
    assert.equal(r.headers['content-length'], String(r.body.length));
    assert.match(reg.accepts.at(-1) ?? '', /^application\/vnd\.npm\.install-v1\+json/, 'Accept forwarded');
  });

  it('answers version documents (by version and by dist-tag) with the tarball URL on the proxy', async () => {
    for (const path of ['devutil-unscoped/1.0.0', '@devutil%2fscoped/latest']) {
      const r = await curl([`${w.base}/npm/${path}`]);
      assert.equal(r.status, 200, path);
      const doc = JSON.parse(r.body.toString()) as {
        name: string;
        version: string;
        dist: { tarball: string };
      };
      const p = reg.packages.find((x) => x.name === doc.name);
      assert.ok(p, path);
      assert.equal(doc.dist.tarball, `${w.base}/npm${p.path}`);
    }
  });

  it("relays the registry's own 404 and refuses oversize metadata in npm's error shape", async () => {
    const missing = await curl([`${w.base}/npm/devutil-missing`]);
    assert.equal(missing.status, 404);
    assert.deepEqual(JSON.parse(missing.body.toString()), { error: 'Not found' });
    const huge = await curl([`${w.base}/npm/${reg.hugeName}`]);
    assert.equal(huge.status, 502);
    assert.match(huge.headers['content-type'] ?? '', /^application\/json/);
    assert.match((JSON.parse(huge.body.toString()) as { error: string }).error, /exceeds/);
    const again = await curl([`${w.base}/npm/${reg.hugeName}`]);
    assert.equal(again.status, 502, 'an oversize answer was not cached');
  });
});

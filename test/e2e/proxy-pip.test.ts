// pip through the proxy against a fake PyPI, in both index formats (docs/protocols/reverse-proxy.md §5.5,
// §8.6).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { type FakePypi, installPypi, WHEEL } from '../fixtures/proxy/pypi.ts';
import { ok } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const PIP_ENV = { PIP_CONFIG_FILE: '/dev/null', PIP_NO_INPUT: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };

describe('proxy: pip', { skip: toolSkip('python3', ['-m', 'pip', '--version']) }, () => {
  let w: World;
  let pypi: FakePypi;
  before(async () => {
    w = await startWorld({ git: false });
    pypi = installPypi(w.net, w.dir);
  });
  after(async () => {
    await w?.close();
  });

  const download = async () => {
    const dest = tempDir('devutil-pip-');
    const args = [
      '-m',
      'pip',
      'download',
      '--no-deps',
      '--no-cache-dir',
      '--index-url',
      `${w.base}/pypi.org/simple/`,
    ];
    await ok('python3', [...args, '-d', dest, 'devutil-hello'], { env: PIP_ENV, timeoutMs: 90_000 });
    return readFileSync(join(dest, WHEEL));
  };
  const wheelFetches = () =>
    w.net.seen.filter((s) => s.host === 'files.pythonhosted.org' && s.url.endsWith('.whl')).length;

  it('downloads through the PEP 691 JSON index, fetching .metadata and the wheel via the proxy', async () => {
    pypi.mode = 'json';
    const before = w.net.seen.length;
    assert.ok((await download()).equals(pypi.wheel));
    const seen = w.net.seen.slice(before);
    const index = seen.find((s) => s.host === 'pypi.org');
    assert.equal(index?.headers['accept-encoding'], 'identity');
    assert.ok(seen.some((s) => s.host === 'files.pythonhosted.org' && s.url.endsWith('.metadata')));
    assert.ok(seen.some((s) => s.host === 'files.pythonhosted.org' && s.url.endsWith('.whl')));
  });

  it('downloads through the HTML index', async () => {
    pypi.mode = 'html';
    const before = w.net.seen.length;
    assert.ok((await download()).equals(pypi.wheel));
    assert.ok(w.net.seen.slice(before).some((s) => s.host === 'pypi.org'));
  });

  it('rewrites index links to the proxy and keeps the sha256 fragments', async () => {
    pypi.mode = 'html';
    const r = await curl([`${w.base}/pypi.org/simple/devutil-hello/`]);
    const body = r.body.toString();
    assert.match(
      body,
      new RegExp(`href="${w.base}/files.pythonhosted.org/packages/[^"]+#sha256=[0-9a-f]{64}"`),
    );
    assert.ok(!body.includes('https://files.pythonhosted.org'));
    assert.match(body, /data-dist-info-metadata="sha256=[0-9a-f]{64}"/);
    assert.equal(r.headers['content-length'], String(r.body.length));
    assert.equal(r.headers['etag'], undefined);
    assert.match(r.headers['vary'] ?? '', /Accept/);
  });

  it('lands a name-normalising 301 with a relative Location on the proxy', async () => {
    pypi.mode = 'json';
    const r = await curl([
      '-H',
      'Accept: application/vnd.pypi.simple.v1+json',
      `${w.base}/pypi.org/simple/Devutil_Hello/`,
    ]);
    assert.equal(r.status, 200);
    const doc = JSON.parse(r.body.toString()) as { files: { url: string }[] };
    assert.ok(doc.files[0]?.url.startsWith(`${w.base}/files.pythonhosted.org/packages/`));
  });

  it('serves the wheel of a second run from the cache', async () => {
    pypi.mode = 'json';
    // The downloads above put the wheel in the cache already (one pip run fewer); warm it only when
    // none of them ran.
    if (wheelFetches() === 0) await download();
    const fetched = wheelFetches();
    assert.ok(fetched > 0);
    assert.ok((await download()).equals(pypi.wheel));
    assert.equal(wheelFetches(), fetched, 'no new upstream fetch of the wheel');
  });
});

// What the proxy guarantees holds for the hf, npm and go mounts (issue 25, item 6): each reaches
// only its own hosts, the byte budget refuses a client past it in the ecosystem's own error shape
// while another client is served, the admin dashboard counts their packages, and the home page
// shows each enabled ecosystem's set-up lines with this instance's URL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { installGo } from '../fixtures/proxy/goproxy.ts';
import { HF_COMMIT, HF_REPO, installHub } from '../fixtures/proxy/hf.ts';
import { installNpm } from '../fixtures/proxy/npm.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';

const ADMIN = 'admin-token-0123456789abcdef';

describe('proxy: ecosystems keep the allow-list, budgets and usage', { timeout: 120_000 }, () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      git: false,
      overrides: {
        proxy: { ecosystems: ['hf', 'npm', 'go'], clientBytes: '500KiB/day' },
        admin: { token: ADMIN },
      },
    });
    installHub(w.net);
    installNpm(w.net);
    installGo(w.net);
  });
  after(() => w?.close());

  it("reaches only each ecosystem's own hosts", async () => {
    // github.com is on the host-path form's list, not on the Hub's; evil.example on neither.
    for (const path of [
      '/hf/_/github.com/o/r/releases/download/v1/asset.bin',
      '/npm/_/evil.example/x',
      '/go/_/cdn-lfs.hf.co/x',
    ]) {
      const r = await curl([`${w.base}${path}`]);
      assert.equal(r.status, 403, `${path}: ${r.body}`);
    }
    assert.equal(
      (await curl([`${w.base}/hf.co/anything`])).status,
      403,
      'storage hosts are not on the host-path list',
    );
  });

  it('charges the byte budget across ecosystems and refuses in the ecosystem shape with Retry-After', async () => {
    const lfs = `${w.base}/hf/${HF_REPO}/resolve/${HF_COMMIT}/model.bin`;
    assert.equal((await curl([lfs])).status, 200);
    assert.equal((await curl([lfs])).status, 200, 'the transfer that crosses the budget finishes');
    const refused = await curl([`${w.base}/npm/devutil-dep`]);
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.match((JSON.parse(refused.body.toString()) as { error: string }).error, /byte budget/);
    const goRefused = await curl([`${w.base}/go/github.com/!dev!util/hello/@v/list`]);
    assert.equal(goRefused.status, 429);
    assert.match(goRefused.headers['content-type'] ?? '', /^text\/plain/);
    const other = await curl(['--interface', '127.0.0.2', `${w.base}/npm/devutil-dep`]);
    assert.equal(other.status, 200, 'another client is still served');
  });

  it('counts npm, Go and Hugging Face packages for the admin dashboard', async () => {
    await curl(['--interface', '127.0.0.3', `${w.base}/go/github.com/!dev!util/hello/@v/v1.0.0.mod`]);
    await curl(['--interface', '127.0.0.3', `${w.base}/hf/api/models/${HF_REPO}`]);
    let keys: string[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await fetch(`${w.proxy.url}/rest/api/v1/admin/stats`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      const data = ((await r.json()) as { data: { topProxied: { packages: { key: string }[] } } }).data;
      keys = data.topProxied.packages.map((p) => p.key);
      if (['npm/devutil-dep', 'go/github.com/DevUtil/hello', `hf/${HF_REPO}`].every((k) => keys.includes(k)))
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const k of ['npm/devutil-dep', 'go/github.com/DevUtil/hello', `hf/${HF_REPO}`])
      assert.ok(keys.includes(k), `${k} in ${keys}`);
  });

  it("shows each enabled ecosystem's set-up lines with this instance's URL on the home page", async () => {
    const page = await (await fetch(`${w.proxy.url}/`)).text();
    for (const line of [
      `export HF_ENDPOINT=${w.base}/hf`,
      `npm config set registry ${w.base}/npm/`,
      `go env -w GOPROXY=${w.base}/go`,
    ])
      assert.ok(page.includes(line), line);
  });
});

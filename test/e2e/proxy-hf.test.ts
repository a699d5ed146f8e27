// Hugging Face through the hf mount against a fake Hub and its storage: a stock @huggingface/hub
// client (in a process that can connect to the proxy alone) downloads a plain file, an LFS file
// and a Xet-backed file; huggingface_hub's HEAD sees the Hub's file headers; the storage hosts are
// reached only through the proxy, with their signed URLs and Xet token never logged; LFS and Xet
// objects are checked against their hash, and a body that does not match is refused and not cached.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { type FakeHub, HF_COMMIT, HF_REPO, installHub } from '../fixtures/proxy/hf.ts';
import { ok } from '../fixtures/proxy/run.ts';
import { startProxy, startWorld, type World } from '../fixtures/proxy/world.ts';
import { LogCapture, type Running } from '../helpers/server.ts';

const CLIENT = join(import.meta.dirname, '..', 'fixtures', 'proxy', 'hf-client.mjs');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('proxy: Hugging Face mount', { timeout: 120_000 }, () => {
  let w: World;
  let hub: FakeHub;
  let fresh: Running;
  const logs = new LogCapture();
  before(async () => {
    w = await startWorld({ git: false, logs, overrides: { proxy: { ecosystems: ['hf'] } } });
    hub = installHub(w.net);
    try {
      fresh = await startProxy(w.net, { proxy: { ecosystems: ['hf'] } }, logs);
    } catch (err) {
      await w.close();
      throw err;
    }
  });
  after(async () => {
    await fresh?.close();
    await w?.close();
  });

  const hosts = (from: number) => new Set(w.net.seen.slice(from).map((s) => s.host));
  const fetched = (host: string) => w.net.seen.filter((s) => s.host === host && s.method === 'GET').length;

  it('lets @huggingface/hub download a plain, an LFS and a Xet-backed file, reaching no host but the proxy', async () => {
    const from = w.net.seen.length;
    const r = await ok(
      process.execPath,
      [CLIENT, `${w.base}/hf`, HF_REPO, 'config.json', 'model.bin', 'weights.safetensors'],
      { timeoutMs: 90_000 },
    );
    const out = JSON.parse(r.stdout) as {
      files: Record<string, string>;
      attempts: string[];
      guardRefused: boolean;
    };
    assert.equal(out.guardRefused, true, 'the client cannot reach other hosts');
    assert.deepEqual(out.attempts, [new URL(w.proxy.url).host]);
    assert.equal(out.files['config.json'], sha(hub.plain));
    assert.equal(out.files['model.bin'], sha(hub.lfs));
    assert.equal(out.files['weights.safetensors'], sha(hub.xet));
    // The proxy fetched from the Hub, the LFS CDN and Xet storage (token, reconstruction, xorbs).
    const seen = hosts(from);
    for (const h of ['huggingface.co', 'cdn-lfs.hf.co', 'cas-server.xethub.hf.co', 'transfer.xethub.hf.co'])
      assert.ok(seen.has(h), h);
  });

  it("answers huggingface_hub's HEAD with the Hub's file headers and serves the Xet file whole through the bridge", async () => {
    const url = `${w.base}/hf/${HF_REPO}/resolve/main/weights.safetensors`;
    const head = await curl(['-I', '-H', 'Accept-Encoding: identity', url]);
    assert.equal(head.status, 200);
    assert.equal(head.headers['x-repo-commit'], HF_COMMIT);
    assert.equal(head.headers['x-linked-size'], String(hub.xet.length));
    assert.match(head.headers['x-xet-hash'] ?? '', /^[0-9a-f]{64}$/);
    const link = head.headers['link'] ?? '';
    assert.ok(
      link.includes(`<${w.base}/hf/api/models/${HF_REPO}/xet-read-token/${HF_COMMIT}>; rel="xet-auth"`),
      link,
    );
    assert.ok(link.includes(`<${w.base}/hf/_/cas-server.xethub.hf.co/v1/reconstructions/`), link);
    assert.ok(!link.includes('https://'), link);
    const get = await curl([url]);
    assert.equal(get.status, 200);
    assert.ok(get.body.equals(hub.xet));
    assert.ok(w.net.seen.some((s) => s.host === 'cas-bridge.xethub.hf.co'));
  });

  it('moves the Xet read token casUrl and the reconstruction URLs onto the proxy', async () => {
    const tok = await curl([`${w.base}/hf/api/models/${HF_REPO}/xet-read-token/${HF_COMMIT}`]);
    const t = JSON.parse(tok.body.toString()) as { casUrl: string; accessToken: string };
    assert.equal(t.casUrl, `${w.base}/hf/_/cas-server.xethub.hf.co`);
    assert.equal(tok.headers['x-xet-cas-url'], `${w.base}/hf/_/cas-server.xethub.hf.co`);
    const hash = /reconstructions\/([0-9a-f]{64})/.exec(
      (await curl(['-I', `${w.base}/hf/${HF_REPO}/resolve/main/weights.safetensors`])).headers['link'] ?? '',
    )?.[1];
    for (const v of ['v1', 'v2']) {
      const rec = await curl([
        '-H',
        `Authorization: Bearer ${t.accessToken}`,
        `${t.casUrl}/${v}/reconstructions/${hash}`,
      ]);
      assert.equal(rec.status, 200, rec.body.toString());
      const body = rec.body.toString();
      assert.ok(!body.includes('https://transfer.xethub.hf.co'), body);
      assert.ok(body.includes(`${w.base}/hf/_/transfer.xethub.hf.co/xorbs/default/`), body);
    }
    // Signed query strings and the Xet token never reach the logs.
    assert.ok(!logs.text().includes(t.accessToken));
    assert.doesNotMatch(logs.text(), /Signature=[0-9a-f]/);
  });

  it('caches what downloads lead to by content (LFS, Xet bridge) and by commit (small files), whatever the revision', async () => {
    const count = (host: string) => w.net.seen.filter((s) => s.host === host).length;
    const get = async (file: string, rev = 'main') => {
      const r = await curl([`${w.base}/hf/${HF_REPO}/resolve/${rev}/${file}`]);
      assert.equal(r.status, 200, `${file}: ${r.body.toString().slice(0, 200)}`);
      assert.equal(r.headers['x-repo-commit'], HF_COMMIT, 'the Hub headers are on every answer');
      return r;
    };
    assert.ok((await get('model.bin')).body.equals(hub.lfs));
    assert.ok((await get('weights.safetensors')).body.equals(hub.xet));
    assert.ok((await get('config.json')).body.equals(hub.plain));
    const before = {
      lfs: count('cdn-lfs.hf.co'),
      bridge: count('cas-bridge.xethub.hf.co'),
      hub: w.net.seen.filter((s) => s.url.startsWith('/api/resolve-cache/')).length,
    };
    const lfs = await get('model.bin', HF_COMMIT);
    assert.ok(lfs.body.equals(hub.lfs));
    assert.equal(lfs.headers['x-linked-etag'], `"${sha(hub.lfs)}"`);
    assert.equal(lfs.headers['x-cache'], 'HIT');
    assert.ok((await get('weights.safetensors')).body.equals(hub.xet));
    assert.ok((await get('config.json')).body.equals(hub.plain));
    assert.equal(count('cdn-lfs.hf.co'), before.lfs, 'LFS object from the cache');
    assert.equal(count('cas-bridge.xethub.hf.co'), before.bridge, 'Xet bridge object from the cache');
    assert.equal(
      w.net.seen.filter((s) => s.url.startsWith('/api/resolve-cache/')).length,
      before.hub,
      'small file from the cache',
    );
  });

  it('never relays Hub web pages and relays its error codes', async () => {
    const page = await curl([`${w.base}/hf/${HF_REPO}`]);
    assert.equal(page.status, 403);
    assert.match(page.headers['content-type'] ?? '', /^application\/json/);
    const missing = await curl([`${w.base}/hf/${HF_REPO}/resolve/main/nope.txt`]);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers['x-error-code'], 'EntryNotFound');
  });

  // On a second server with a cache of its own (the first one holds these files by now): a body
  // that does not hash to the name its storage URL gives it is refused (cut before its end, never
  // whole) and not cached; the right one then is.
  for (const [kind, file, host] of [
    ['LFS', 'model.bin', 'cdn-lfs.hf.co'],
    ['Xet', 'weights.safetensors', 'cas-bridge.xethub.hf.co'],
  ] as const) {
    it(`refuses a ${kind} object whose body does not match its hash, and caches nothing`, async () => {
      const url = `${fresh.url}/proxy/hf/${HF_REPO}/resolve/main/${file}`;
      const good = kind === 'LFS' ? hub.lfs : hub.xet;
      hub.tamper.add(kind === 'LFS' ? 'lfs' : 'xet');
      try {
        for (let i = 1; i <= 2; i++) {
          const before = fetched(host);
          const r = await curl([url]);
          assert.ok(r.exit !== 0 || r.status === 502, `attempt ${i}: refused (${r.status}, exit ${r.exit})`);
          assert.ok(r.body.length < good.length, `attempt ${i}: never the whole body`);
          assert.equal(fetched(host), before + 1, `attempt ${i}: asked upstream again (nothing cached)`);
        }
      } finally {
        hub.tamper.clear();
      }
      assert.match(logs.text(), /upstream object does not match its hash/);
      const ok = await curl([url]);
      assert.equal(ok.status, 200);
      assert.ok(ok.body.equals(good), 'the right body is served');
      const before = fetched(host);
      const hit = await curl([url]);
      assert.ok(hit.body.equals(good));
      assert.equal(hit.headers['x-cache'], 'HIT', 'and cached once verified');
      assert.equal(fetched(host), before);
    });
  }
});

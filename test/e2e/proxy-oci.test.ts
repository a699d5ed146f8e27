// Container registries through the proxy with the real clients (issue 25, acceptance 1 and 2):
// skopeo inspects and copies a multi-layer image by the path form from Debian's docker-registry
// (token authentication against an auth.docker.io stand-in, real host names), podman pulls through
// the bare-host mirror form from a registries.conf, a second pull fetches no blob upstream, and a
// corrupted blob fails the pull, is not cached, and the pull succeeds once the upstream is fixed.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type RegistryWorld, startRegistryWorld } from '../fixtures/oci/registry.ts';
import { run } from '../fixtures/proxy/run.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const skip = toolSkip('skopeo') || toolSkip('podman') || toolSkip('docker-registry', ['--version']);

describe('proxy: container registries with skopeo and podman', { skip, timeout: 300_000 }, () => {
  let w: RegistryWorld;
  let proxy: Running;
  let host: string;
  const logs = new LogCapture();
  const dir = tempDir('devutil-oci-');
  // The clients' own settings, nothing from this machine's /etc/containers.
  const policy = join(dir, 'policy.json');
  const auth = join(dir, 'auth.json');
  const env = () => ({
    REGISTRY_AUTH_FILE: auth,
    CONTAINERS_REGISTRIES_CONF: join(dir, 'registries.conf'),
    HOME: dir,
  });

  before(async () => {
    writeFileSync(policy, JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
    writeFileSync(auth, '{}');
    w = await startRegistryWorld(join(dir, 'world'));
    proxy = await startTestServer({
      env: {
        DEVUTIL_PROXY_ECOSYSTEMS: 'oci',
        DEVUTIL_PROXY_RESOLVE: w.resolve.join(','),
        DEVUTIL_PROXY_UPSTREAM_CA: w.caFile,
      },
      logs,
    }).catch(async (err) => {
      await w.close();
      throw err;
    });
    host = new URL(proxy.url).host;
    writeFileSync(
      join(dir, 'registries.conf'),
      `unqualified-search-registries = ["docker.io"]\n\n[[registry]]\nprefix = "docker.io"\nlocation = "docker.io"\n\n[[registry.mirror]]\nlocation = "${host}"\ninsecure = true\n`,
    );
  });
  after(async () => {
    await proxy?.close();
    await w?.close();
  });

  const skopeo = (args: string[]) =>
    run('skopeo', ['--policy', policy, '--registries-conf', join(dir, 'registries.conf'), ...args], {
      env: env(),
      timeoutMs: 120_000,
    });

  it('skopeo inspect reads the image through the path form', async () => {
    const r = await skopeo([
      'inspect',
      '--tls-verify=false',
      `docker://${host}/docker.io/library/devutil-test:1`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout) as { Digest: string; Layers: string[] };
    assert.equal(info.Digest, w.image.manifestDigest);
    assert.deepEqual(
      info.Layers,
      w.image.layers.map((l) => l.digest),
    );
  });

  it('skopeo copy pulls every layer through the path form, a second copy fetches no blob upstream', async () => {
    const ref = `docker://${host}/docker.io/library/devutil-test:1`;
    const first = join(dir, 'copy-1');
    const r1 = await skopeo(['copy', '--src-tls-verify=false', ref, `dir:${first}`]);
    assert.equal(r1.code, 0, r1.stderr);
    for (const b of [w.image.config, ...w.image.layers])
      assert.ok(readFileSync(join(first, b.digest.slice(7))).equals(b.data), `${b.digest} copied whole`);
    const fetched = w.blobFetches().map((s) => s.url.replace(/^.*\/blobs\//, ''));
    assert.deepEqual(
      [...fetched].sort(),
      [w.image.config, ...w.image.layers].map((b) => b.digest).sort(),
      'each blob fetched from the registry once',
    );
    assert.ok(
      w.seen.some((s) => s.host === 'auth.docker.io'),
      'an anonymous token was fetched from the realm',
    );
    const r2 = await skopeo(['copy', '--src-tls-verify=false', ref, `dir:${join(dir, 'copy-2')}`]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.equal(w.blobFetches().length, fetched.length, 'the second copy came from the cache');
  });

  it('podman pulls through the bare-host mirror of registries.conf, and again from the cache', async () => {
    const image = w.addImage('library/devutil-podman', '2', [150_000, 90_000]);
    const storage = join(dir, 'podman');
    const podman = (args: string[]) =>
      run(
        'podman',
        [
          '--root',
          join(storage, 'root'),
          '--runroot',
          join(storage, 'run'),
          '--storage-driver',
          'vfs',
          '--cgroup-manager',
          'cgroupfs',
          '--events-backend',
          'none',
          ...args,
        ],
        { env: env(), timeoutMs: 120_000 },
      );
    const before = w.blobFetches().length;
    const r1 = await podman(['pull', '--signature-policy', policy, 'docker.io/library/devutil-podman:2']);
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(w.blobFetches().length - before, 3, 'config and two layers, once each');
    const mirrored = w.seen.filter((s) => s.url.includes('/v2/library/devutil-podman/'));
    assert.ok(mirrored.length > 0, 'asked for by its Docker Hub name (bare-host form)');
    const ls = await podman([
      'image',
      'inspect',
      '--format',
      '{{.Digest}}',
      'docker.io/library/devutil-podman:2',
    ]);
    assert.equal(ls.stdout.trim(), image.manifestDigest);
    assert.equal((await podman(['rmi', 'docker.io/library/devutil-podman:2'])).code, 0);
    const r2 = await podman(['pull', '--signature-policy', policy, 'docker.io/library/devutil-podman:2']);
    assert.equal(r2.code, 0, r2.stderr);
    assert.equal(w.blobFetches().length - before, 3, 'the second pull fetched no blob upstream');
  });

  it('fails a pull whose blob is corrupted upstream, caches nothing of it, and succeeds once it is fixed', async () => {
    const image = w.addImage('library/devutil-corrupt', '1', [200_000, 120_000]);
    const bad = image.layers[1]!;
    const file = w.blobFile(bad.digest);
    const broken = Buffer.from(bad.data);
    const mid = broken.length >> 1;
    broken[mid] = (broken[mid] ?? 0) ^ 0xff;
    writeFileSync(file, broken);
    const ref = `docker://${host}/docker.io/library/devutil-corrupt:1`;
    const r1 = await skopeo(['copy', '--src-tls-verify=false', ref, `dir:${join(dir, 'corrupt-1')}`]);
    assert.notEqual(r1.code, 0, 'the pull fails');
    const tries = () => w.blobFetches().filter((s) => s.url.endsWith(bad.digest)).length;
    const afterFailure = tries();
    assert.ok(afterFailure >= 1);
    assert.ok(logs.text().includes('oci blob refused'), 'the refusal is logged');
    writeFileSync(file, bad.data);
    const r2 = await skopeo(['copy', '--src-tls-verify=false', ref, `dir:${join(dir, 'corrupt-2')}`]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.ok(readFileSync(join(dir, 'corrupt-2', bad.digest.slice(7))).equals(bad.data));
    assert.equal(tries(), afterFailure + 1, 'the bad copy was not cached: fetched again');
  });

  it('never logs a token', () => {
    const tokens = w.seen.map((s) => s.authorization).filter((a): a is string => Boolean(a));
    assert.ok(tokens.length > 0, 'the registry was sent tokens');
    for (const t of tokens) assert.ok(!logs.text().includes(t.replace(/^Bearer /, '')), 'token in the logs');
  });
});

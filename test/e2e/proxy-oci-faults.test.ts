// Container registries through the proxy, hostile upstreams and clients (issue 25 "Bad input",
// acceptance 6 for OCI, and the 16-clients row): bad digests, cut blobs, oversized manifests,
// realms and redirects off the allow list, refused names; 16 clients pulling one uncached image
// at once cause one upstream fetch per blob; Range; byte budgets, the private mode's login, the
// operator's Docker Hub account and the admin dashboard's packages. OCI error JSON everywhere.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import { type RegistryWorld, startRegistryWorld } from '../fixtures/oci/registry.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const HUB_TOKEN = 'dckr_pat_operator-secret-0123456789';
const SECRET = 'oci-private-mirror-1';
registerSecret(HUB_TOKEN);
registerSecret(SECRET);

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

// A manifest asked for by its digest, and another one the registry answers with, its header naming
// the digest of what it sent (consistent with itself, not with what was asked for).
const ASKED = Buffer.from(
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}',
);
const SWAPPED = Buffer.from(
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[],"x":1}',
);

/**
 * A registry client doing what docker does: ping, token from the realm, then the request; from
 * its own loopback address when given one (each of the 16 clients is a client of its own).
 */
async function client(base: string, password?: string, from?: string) {
  const dispatcher = from ? new Agent({ localAddress: from }) : undefined;
  const fetch = (url: string, init: { headers?: Record<string, string>; method?: string } = {}) =>
    undiciFetch(url, { ...init, ...(dispatcher ? { dispatcher } : {}) }) as unknown as Promise<Response>;
  const ping = await fetch(`${base}/v2/`);
  assert.equal(ping.status, 401);
  const realm = /realm="([^"]+)"/.exec(ping.headers.get('www-authenticate') ?? '')?.[1];
  assert.ok(realm, 'a Bearer challenge with a realm');
  const headers: Record<string, string> = password
    ? { authorization: `Basic ${Buffer.from(`any:${password}`).toString('base64')}` }
    : {};
  const t = await fetch(`${realm}?service=devutil&scope=repository:x:pull`, { headers });
  const token = t.ok ? ((await t.json()) as { token: string }).token : '';
  return {
    tokenStatus: t.status,
    raw: (path: string) => rawGet(base, path, token ? { authorization: `Bearer ${token}` } : {}),
    get: (path: string, h: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { headers: { ...h, ...(token ? { authorization: `Bearer ${token}` } : {}) } }),
  };
}

/** GET with the path sent as written (fetch would resolve dot segments before sending). */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<Response> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: h }));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function ociError(r: Response): Promise<string> {
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  const body = (await r.json()) as { errors: { code: string; message: string }[] };
  assert.equal(body.errors.length, 1);
  return body.errors[0]?.code ?? '';
}

/** A scripted registry on ghcr.io: challenge, token, and the answers of the cases below. */
function ghcr(w: RegistryWorld, blob: Buffer, other: Buffer, big: Buffer, bigWrong: Buffer) {
  let bigSent = 0;
  w.fault('ghcr.io', (req, res, url) => {
    if (url.pathname === '/token') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"token":"ghcr-anonymous-token"}');
      return true;
    }
    if (req.headers.authorization !== 'Bearer ghcr-anonymous-token') {
      res
        .writeHead(401, { 'www-authenticate': 'Bearer realm="https://ghcr.io/token",service="ghcr.io"' })
        .end();
      return true;
    }
    const p = url.pathname;
    if (p === '/v2/o/badmanifest/manifests/1') {
      const body = '{"schemaVersion":2}';
      res.writeHead(200, {
        'content-type': 'application/vnd.oci.image.manifest.v1+json',
        'docker-content-digest': sha(Buffer.from('something else')),
      });
      res.end(body);
      return true;
    }
    if (p === `/v2/o/img/manifests/${sha(ASKED)}`) {
      res.writeHead(200, {
        'content-type': 'application/vnd.oci.image.index.v1+json',
        'docker-content-digest': sha(SWAPPED),
      });
      res.end(SWAPPED);
      return true;
    }
    if (p === '/v2/o/bigmanifest/manifests/1') {
      bigSent++;
      res.writeHead(200, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' });
      res.end(Buffer.alloc(80_000, 32));
      return true;
    }
    if (p === `/v2/o/img/blobs/${sha(blob)}`) {
      // The wrong bytes under the right digest.
      res.writeHead(200, { 'content-length': other.length, 'content-type': 'application/octet-stream' });
      res.end(other);
      return true;
    }
    if (p === `/v2/o/img/blobs/${sha(big)}`) {
      // Sent slowly, so the client is streaming it when the last byte turns out wrong.
      res.writeHead(200, { 'content-length': bigWrong.length });
      let off = 0;
      const step = () => {
        if (off >= bigWrong.length) return void res.end();
        const n = Math.min(256 * 1024, bigWrong.length - off);
        res.write(bigWrong.subarray(off, off + n), () => setTimeout(step, 20));
        off += n;
      };
      step();
      return true;
    }
    if (p === `/v2/o/img/blobs/${sha(other)}`) {
      // Cut in the middle.
      res.writeHead(200, { 'content-length': other.length });
      res.write(other.subarray(0, other.length >> 1), () => res.destroy());
      return true;
    }
    if (p === `/v2/o/img/blobs/${sha(Buffer.from('redirected'))}`) {
      res.writeHead(307, { location: 'https://evil.example/blob' }).end();
      return true;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":[{"code":"NAME_UNKNOWN"}]}');
    return true;
  });
  return { bigSent: () => bigSent };
}

describe('proxy: container registries, faults and limits', {
  skip: toolSkip('docker-registry', ['--version']),
  timeout: 300_000,
}, () => {
  let w: RegistryWorld;
  let proxy: Running;
  let hub: Running;
  let priv: Running;
  let tight: Running;
  const logs = new LogCapture();
  const blob = randomBytes(70_000);
  const other = randomBytes(90_000);
  // A layer above the verify-first size, and the wrong bytes the registry sends for it.
  const big = randomBytes(3 * 1024 * 1024);
  const bigWrong = Buffer.concat([big.subarray(0, big.length - 1), Buffer.from([big.at(-1)! ^ 1])]);
  let scripted: ReturnType<typeof ghcr>;

  before(async () => {
    w = await startRegistryWorld(join(tempDir('devutil-oci-'), 'world'));
    scripted = ghcr(w, blob, other, big, bigWrong);
    w.fault('quay.io', (_req, res, url) => {
      const realm = url.pathname.includes('downgrade')
        ? 'http://quay.io/token'
        : 'https://evil.example/token';
      res.writeHead(401, { 'www-authenticate': `Bearer realm="${realm}",service="quay.io"` }).end();
      return true;
    });
    const env = {
      DEVUTIL_PROXY_ECOSYSTEMS: 'oci',
      DEVUTIL_PROXY_RESOLVE: w.resolve.join(','),
      DEVUTIL_PROXY_UPSTREAM_CA: w.caFile,
      DEVUTIL_PROXY_OCI_MAX_MANIFEST_BYTES: '64KiB',
      DEVUTIL_ADMIN_TOKEN: 'oci-admin-token-0123456789',
      DEVUTIL_PROXY_MAX_CONCURRENT: '64',
    };
    try {
      proxy = await startTestServer({ env, logs });
      hub = await startTestServer({
        env: {
          ...env,
          DEVUTIL_PROXY_OCI_DOCKERHUB_USER: 'operator',
          DEVUTIL_PROXY_OCI_DOCKERHUB_TOKEN: HUB_TOKEN,
        },
        logs,
      });
      priv = await startTestServer({ env: { ...env, DEVUTIL_PROXY_SECRET: SECRET }, logs });
      tight = await startTestServer({
        env: {
          ...env,
          DEVUTIL_PROXY_CLIENT_BYTES: '1MiB/day',
          DEVUTIL_PROXY_OCI_REGISTRIES: 'docker.io=registry-1.docker.io',
        },
        logs,
      });
    } catch (err) {
      await Promise.all([proxy, hub, priv, tight].map((s) => s?.close()));
      await w.close();
      throw err;
    }
  });
  after(async () => {
    await Promise.all([proxy, hub, priv, tight].map((s) => s?.close()));
    await w?.close();
  });

  it('16 clients pulling one uncached image at once cause one upstream fetch per blob', async () => {
    const image = w.addImage('library/devutil-sixteen', '1', [700_000, 400_000, 250_000]);
    const blobs = [image.config, ...image.layers];
    const before = w.blobFetches().length;
    const pulls = Array.from({ length: 16 }, async (_, k) => {
      const c = await client(proxy.url, undefined, `127.0.0.${10 + k}`);
      const m = await c.get('/v2/docker.io/library/devutil-sixteen/manifests/1', {
        accept: 'application/vnd.oci.image.manifest.v1+json',
      });
      assert.equal(m.status, 200);
      assert.equal(m.headers.get('docker-content-digest'), image.manifestDigest);
      const manifest = (await m.json()) as { layers: { digest: string }[]; config: { digest: string } };
      const digests = [manifest.config.digest, ...manifest.layers.map((l) => l.digest)];
      return Promise.all(
        digests.map(async (d) => {
          const r = await c.get(`/v2/docker.io/library/devutil-sixteen/blobs/${d}`);
          assert.equal(r.status, 200);
          return sha(Buffer.from(await r.arrayBuffer())) === d;
        }),
      );
    });
    const results = (await Promise.all(pulls)).flat();
    assert.equal(results.length, 16 * blobs.length);
    assert.ok(results.every(Boolean), 'every client got every blob whole');
    const fetched = w
      .blobFetches()
      .slice(before)
      .map((s) => s.url.replace(/^.*\/blobs\//, ''));
    assert.deepEqual(fetched.sort(), blobs.map((b) => b.digest).sort(), 'one upstream fetch per blob');
    // The cached manifest answers If-None-Match by infra/http/conditional.ts: weakly, as a list.
    const c = await client(proxy.url, undefined, '127.0.0.9');
    const tag = `"${image.manifestDigest}"`;
    for (const [inm, want] of [
      [tag, 304],
      [`W/${tag}`, 304],
      [`"x", ${tag}`, 304],
      ['"x"', 200],
    ] as const) {
      const nm = await c.get('/v2/docker.io/library/devutil-sixteen/manifests/1', {
        accept: 'application/vnd.oci.image.manifest.v1+json',
        'if-none-match': inm,
      });
      await nm.arrayBuffer();
      assert.equal(nm.status, want, inm);
    }
    const manifests = w.seen.filter(
      (s) =>
        s.method === 'GET' && s.status !== 401 && s.url.includes('/v2/library/devutil-sixteen/manifests/'),
    );
    assert.equal(manifests.length, 1, 'one manifest fetch (after the one token challenge)');
  });

  it('answers Range on blobs, uncached and cached, and HEAD with the length', async () => {
    const image = w.addImage('library/devutil-range', '1', [300_000]);
    const layer = image.layers[0]!;
    const c = await client(proxy.url);
    const path = `/v2/docker.io/library/devutil-range/blobs/${layer.digest}`;
    const cold = await c.get(path, { range: 'bytes=1000-1999' });
    assert.equal(cold.status, 206);
    assert.equal(cold.headers.get('content-range'), `bytes 1000-1999/${layer.data.length}`);
    assert.ok(Buffer.from(await cold.arrayBuffer()).equals(layer.data.subarray(1000, 2000)));
    // The range started the one fetch of the whole blob; what follows comes from the cache.
    await new Promise((r) => setTimeout(r, 300));
    const fetches = w.blobFetches().length;
    const tail = await c.get(path, { range: 'bytes=-100' });
    assert.equal(tail.status, 206);
    assert.ok(Buffer.from(await tail.arrayBuffer()).equals(layer.data.subarray(-100)));
    const head = await fetch(`${proxy.url}${path}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(layer.data.length));
    assert.equal(head.headers.get('docker-content-digest'), layer.digest);
    const past = await c.get(path, { range: `bytes=${layer.data.length}-` });
    assert.equal(past.status, 416);
    assert.equal(w.blobFetches().length, fetches, 'served from the cache');
  });

  it('answers a small blob that does not match its digest with 502 DIGEST_INVALID, caching nothing', async () => {
    const c = await client(proxy.url);
    const path = `/v2/ghcr.io/o/img/blobs/${sha(blob)}`;
    for (let i = 0; i < 2; i++) {
      const r = await c.get(path);
      assert.equal(r.status, 502);
      assert.equal(await ociError(r), 'DIGEST_INVALID');
    }
    const tries = w.seen.filter((s) => s.host === 'ghcr.io' && s.status !== 401 && s.url.endsWith(sha(blob)));
    assert.equal(tries.length, 2, 'nothing was cached: asked upstream each time');
  });

  it('cuts a streamed layer that does not match its digest before its last byte, caching nothing', async () => {
    const c = await client(proxy.url);
    const path = `/v2/ghcr.io/o/img/blobs/${sha(big)}`;
    for (let i = 0; i < 2; i++) {
      let got = 0;
      await assert.rejects(
        (async () => {
          const r = await c.get(path);
          assert.equal(r.status, 200, 'a layer streams before it is checked');
          for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) got += chunk.length;
        })(),
      );
      assert.ok(got < bigWrong.length, `never the whole body (${got} bytes)`);
    }
    assert.equal(
      w.seen.filter((s) => s.host === 'ghcr.io' && s.status !== 401 && s.url.endsWith(sha(big))).length,
      2,
    );
  });

  it('fails a blob cut short upstream, and caches nothing', async () => {
    const c = await client(proxy.url);
    const path = `/v2/ghcr.io/o/img/blobs/${sha(other)}`;
    for (let i = 0; i < 2; i++) {
      const r = await c.get(path);
      assert.equal(r.status, 502);
      assert.equal(await ociError(r), 'DIGEST_INVALID');
    }
    assert.equal(
      w.seen.filter((s) => s.host === 'ghcr.io' && s.status !== 401 && s.url.endsWith(sha(other))).length,
      2,
    );
  });

  const table: [string, string, number, string][] = [
    [
      'a manifest whose digest does not match',
      '/v2/ghcr.io/o/badmanifest/manifests/1',
      502,
      'DIGEST_INVALID',
    ],
    [
      'a manifest by digest answered with another one, whose header names what was sent',
      `/v2/ghcr.io/o/img/manifests/${sha(ASKED)}`,
      502,
      'DIGEST_INVALID',
    ],
    ['a manifest over the size cap', '/v2/ghcr.io/o/bigmanifest/manifests/1', 413, 'SIZE_INVALID'],
    ['a realm on a host off the allow list', '/v2/quay.io/o/r/manifests/1', 502, 'UNAVAILABLE'],
    ['a realm over plain http', '/v2/quay.io/o/downgrade/manifests/1', 502, 'UNAVAILABLE'],
    [
      'a blob redirect to a host off the allow list',
      `/v2/ghcr.io/o/img/blobs/${sha(Buffer.from('redirected'))}`,
      502,
      'UNAVAILABLE',
    ],
    [
      'a blob the registry does not have',
      `/v2/ghcr.io/o/img/blobs/${sha(Buffer.from('missing'))}`,
      404,
      'BLOB_UNKNOWN',
    ],
    ['a dot-dot component', '/v2/docker.io/library/../secret/manifests/1', 400, 'NAME_INVALID'],
    ['an encoded slash', '/v2/docker.io/library%2Falpine/manifests/1', 400, 'NAME_INVALID'],
    ['an encoded dot-dot', '/v2/docker.io/library/%2e%2e/manifests/1', 400, 'NAME_INVALID'],
    ['upper case in a name', '/v2/docker.io/Library/alpine/manifests/1', 400, 'NAME_INVALID'],
    ['a tag that is not a tag', '/v2/docker.io/library/alpine/manifests/-latest', 400, 'TAG_INVALID'],
    [
      'a tag over 128 characters',
      `/v2/docker.io/library/alpine/manifests/${'a'.repeat(129)}`,
      400,
      'TAG_INVALID',
    ],
    ['a digest of the wrong length', '/v2/docker.io/library/alpine/blobs/sha256:abc', 400, 'DIGEST_INVALID'],
    [
      'an unknown digest algorithm',
      `/v2/docker.io/library/alpine/blobs/md5:${'a'.repeat(32)}`,
      400,
      'DIGEST_INVALID',
    ],
    ['a blob by tag', '/v2/docker.io/library/alpine/blobs/latest', 400, 'DIGEST_INVALID'],
    ['a registry that is not served', '/v2/evil.example/o/r/manifests/1', 403, 'DENIED'],
    ['a registry name with a port', '/v2/ghcr.io:443/o/r/manifests/1', 400, 'NAME_INVALID'],
    [
      'the referrers API',
      `/v2/docker.io/library/alpine/referrers/sha256:${'a'.repeat(64)}`,
      404,
      'UNSUPPORTED',
    ],
    ['a name over 255 characters', `/v2/docker.io/${'a/'.repeat(130)}x/manifests/1`, 400, 'NAME_INVALID'],
  ];
  for (const [what, path, status, code] of table) {
    it(`answers ${what} with ${status} ${code}`, async () => {
      const c = await client(proxy.url);
      const r = await c.raw(path);
      assert.equal(r.status, status);
      assert.equal(await ociError(r), code);
      assert.equal(r.headers.get('docker-distribution-api-version'), 'registry/2.0');
    });
  }

  it('caches neither the bad nor the oversized manifest', async () => {
    const before = scripted.bigSent();
    const c = await client(proxy.url);
    await c.get('/v2/ghcr.io/o/bigmanifest/manifests/1');
    assert.equal(scripted.bigSent(), before + 1);
    assert.ok(!w.seen.some((s) => s.host === 'evil.example'), 'nothing went to the refused realm');
  });

  for (const method of ['PUT', 'POST', 'PATCH', 'DELETE']) {
    it(`refuses ${method} (a read-only mirror) with 405 UNSUPPORTED`, async () => {
      const r = await fetch(`${proxy.url}/v2/docker.io/library/alpine/blobs/uploads/`, {
        method,
        body: method === 'DELETE' ? null : 'x',
      });
      assert.equal(r.status, 405);
      assert.equal(await ociError(r), 'UNSUPPORTED');
    });
  }

  it('serves the same routes under /proxy/v2/ (the proxy host form)', async () => {
    const r = await fetch(`${proxy.url}/proxy/v2/`);
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /realm="http:\/\/127\.0\.0\.1:\d+\/v2\/token"/);
  });

  it('pulls from Docker Hub with the operator account at the token service, never logging it', async () => {
    const c = await client(hub.url);
    const r = await c.get('/v2/library/devutil-test/manifests/1', {
      accept: 'application/vnd.oci.image.manifest.v1+json',
    });
    assert.equal(r.status, 200);
    const basic = `Basic ${Buffer.from(`operator:${HUB_TOKEN}`).toString('base64')}`;
    assert.ok(w.seen.some((s) => s.host === 'auth.docker.io' && s.authorization === basic));
    assert.ok(
      !w.seen.some((s) => s.host === 'registry-1.docker.io' && s.authorization === basic),
      'only to the token service',
    );
    assert.ok(!logs.text().includes(HUB_TOKEN));
    assert.ok(!logs.text().includes(Buffer.from(`operator:${HUB_TOKEN}`).toString('base64')));
  });

  it('private mode: tokens only for the secret (docker login), every pull needs one', async () => {
    assert.equal((await client(priv.url)).tokenStatus, 401);
    assert.equal((await client(priv.url, 'wrong-password')).tokenStatus, 401);
    const anon = await fetch(`${priv.url}/v2/docker.io/library/devutil-test/manifests/1`);
    assert.equal(anon.status, 401);
    assert.equal(await ociError(anon), 'UNAUTHORIZED');
    assert.match(
      anon.headers.get('www-authenticate') ?? '',
      /scope="repository:docker.io\/library\/devutil-test:pull"/,
    );
    const c = await client(priv.url, SECRET);
    assert.equal(c.tokenStatus, 200);
    const r = await c.get('/v2/docker.io/library/devutil-test/manifests/1', {
      accept: 'application/vnd.oci.image.manifest.v1+json',
    });
    assert.equal(r.status, 200);
    assert.ok(!logs.text().includes(SECRET));
  });

  it('applies the byte budget and the registry list, and counts images for the admin dashboard', async () => {
    const image = w.addImage('library/devutil-budget', '1', [600_000, 600_000]);
    const c = await client(tight.url);
    const statuses: number[] = [];
    for (const l of image.layers) {
      const r = await c.get(`/v2/docker.io/library/devutil-budget/blobs/${l.digest}`);
      statuses.push(r.status);
      if (r.status === 200) await r.arrayBuffer();
      else {
        assert.equal(await ociError(r), 'TOOMANYREQUESTS');
        assert.ok(Number(r.headers.get('retry-after')) > 0);
      }
    }
    const third = await c.get(`/v2/docker.io/library/devutil-budget/blobs/${image.config.digest}`);
    statuses.push(third.status);
    assert.deepEqual(
      statuses,
      [200, 200, 429],
      'the transfer that crosses the budget ends, the next is refused',
    );
    const ghcrOff = await c.get('/v2/ghcr.io/o/img/manifests/1');
    assert.equal(ghcrOff.status, 403, "ghcr.io is not in this server's DEVUTIL_PROXY_OCI_REGISTRIES");
    const s = await fetch(`${tight.url}/rest/api/v1/admin/stats`, {
      headers: { authorization: 'Bearer oci-admin-token-0123456789' },
    });
    const data = (
      (await s.json()) as { data: { topProxied: { packages: { key: string }[] }; proxyEcosystems: string[] } }
    ).data;
    assert.ok(data.topProxied.packages.some((p) => p.key === 'oci/docker.io/library/devutil-budget'));
    assert.deepEqual(data.proxyEcosystems, ['oci']);
  });
});

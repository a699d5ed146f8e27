// S3 unavailable: the file API answers a quick 503 (no hang, no 500), readiness says so, and it
// recovers when the store returns. A store that accepts connections but never answers is cut off
// by the configured timeout. One `devutil serve` for both: its endpoint's port is first s3rver
// (up, stopped, back), then a server that accepts and never answers.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import S3rver from 's3rver';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';

function s3Env(port: number, timeoutMs: number): Record<string, string> {
  return {
    DEVUTIL_STORAGE_BACKEND: 's3',
    DEVUTIL_STORAGE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
    DEVUTIL_STORAGE_S3_BUCKET: 'faults',
    DEVUTIL_STORAGE_S3_ACCESS_KEY_ID: 'S3RVER',
    DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY: 'S3RVER',
    DEVUTIL_STORAGE_S3_FORCE_PATH_STYLE: 'true',
    DEVUTIL_STORAGE_S3_TIMEOUT_MS: String(timeoutMs),
  };
}

async function timed(url: string, init?: RequestInit) {
  const t = Date.now();
  const r = await fetch(url, init);
  return { status: r.status, body: await r.text(), ms: Date.now() - t };
}

function form(text: string) {
  const f = new FormData();
  f.append('file', new Blob([text], { type: 'text/plain' }), 'a.txt');
  return { method: 'POST', body: f };
}

/** An identicon for a hash nobody uploaded: PNG bytes, whatever the blob store does. */
async function generatedAvatar(base: string): Promise<void> {
  const r = await fetch(`${base}/avatar/${'5e'.repeat(16)}?d=identicon&s=64`);
  assert.equal(r.status, 200, await r.clone().text());
  assert.equal(r.headers.get('content-type'), 'image/png');
  const png = Buffer.from(await r.arrayBuffer());
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
}

describe('S3 faults', { timeout: 120_000 }, () => {
  const dir = tempDir('devutil-s3f-');
  let port: number;
  let s3: S3rver | undefined;
  let hung: Server | undefined;
  const sockets: Socket[] = [];
  let dev: DevutilProcess;
  const start = async () => {
    s3 = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: 'faults', configs: [] }],
    });
    await s3.run();
  };
  before(async () => {
    port = await freePort();
    await start();
    dev = await startDevutilProcess(s3Env(port, 1000));
  });
  after(async () => {
    await dev?.stop();
    await s3?.close().catch(() => {});
    for (const s of sockets) s.destroy();
    hung?.close();
  });

  describe('S3 unavailable', () => {
    it('answers a quick 503 while the store is down and recovers when it returns', async () => {
      assert.equal((await timed(`${dev.url}/api/file/kept`, form('kept'))).status, 200);
      await s3?.close();
      for (const [url, init] of [
        [`${dev.url}/api/file/kept`, undefined],
        [`${dev.url}/api/file/new`, form('x')],
      ] as const) {
        const r = await timed(url, init);
        assert.equal(r.status, 503, r.body);
        assert.deepEqual(JSON.parse(r.body), {
          success: false,
          message: 'storage backend unavailable; try again shortly',
        });
        // An answer rather than a hang; not a speed figure.
        assert.ok(r.ms < 60_000, `took ${r.ms} ms`);
      }
      // S3 is shared by every node: the utilities that store in it are degraded, the node stays in
      // rotation for the rest (the first answer may be the last result, refreshed in the background).
      let ready = await timed(`${dev.url}/readyz`);
      for (let i = 0; i < 100 && !ready.body.includes('"degraded":["'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        ready = await timed(`${dev.url}/readyz`);
      }
      assert.equal(ready.status, 200, ready.body);
      assert.equal(JSON.parse(ready.body).status, 'degraded');
      assert.deepEqual(JSON.parse(ready.body).degraded, ['avatar', 'files', 'telegram']);
      assert.equal(JSON.parse(ready.body).checks.blobs.ok, false);
      // Generated avatars need no store: an identicon is served while S3 is down.
      await generatedAvatar(dev.url);
      await start();
      const back = await timed(`${dev.url}/api/file/kept`);
      assert.equal(back.status, 200);
      assert.equal(back.body, 'kept');
    });
  });

  describe('S3 that accepts connections and never answers', () => {
    before(async () => {
      // The same port, now held by a server that takes connections and never answers them; the
      // connections devutil kept to s3rver go with s3rver.
      await s3?.close();
      s3 = undefined;
      hung = createServer((s) => sockets.push(s));
      await new Promise<void>((r) => hung?.listen(port, '127.0.0.1', r));
    });

    it('gives up after the timeout with 503 instead of hanging', async () => {
      const r = await timed(`${dev.url}/api/file/anything`);
      assert.equal(r.status, 503, r.body);
      assert.ok(r.ms < 60_000, `took ${r.ms} ms`);
      const again = await timed(`${dev.url}/healthz`);
      assert.equal(again.status, 200);
    });

    it('serves generated avatars although the store never answers', async () => {
      await generatedAvatar(dev.url);
    });
  });
});

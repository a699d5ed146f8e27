// tus 1.0 at /api/upload/ over real HTTP: discovery, creation, offsets, a PATCH cut mid-body and
// resumed, 409/412/415/423, termination, expiration, hostile headers, and tus-js-client end to end.
// Every finished upload must give the exact 2.1 result a multipart upload of the same bytes gives.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as tus from 'tus-js-client';
import { type Running, startTestServer, tempDir } from '../../../../test/helpers/server.ts';
import { create, cutPatch, decodeResult, patch, sample } from '../../../../test/helpers/tus.ts';
import { received } from './access.ts';

const T = { 'tus-resumable': '1.0.0' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const MAX = 4 * 1024 * 1024;

/** The result a plain multipart upload of the same bytes gives (the 2.1 reference), data.key aside. */
async function reference(base: string, body: Buffer, name: string, type: string) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(body)], { type }), name);
  const res = await fetch(`${base}/api/file/ref-${randomBytes(4).toString('hex')}`, {
    method: 'POST',
    body: form,
  });
  const json = await res.json();
  return json;
}

describe('tus 1.0 at /api/upload/', () => {
  let srv: Running;
  let skew = 0;
  let dataDir: string;
  before(async () => {
    dataDir = tempDir();
    srv = await startTestServer({
      overrides: {
        server: { dataDir },
        files: { maxBytes: MAX, uploadLockWaitMs: 300, uploadExpirySec: 3600 },
      },
      now: () => Date.now() + skew,
    });
  });
  after(() => srv.close());
  const key = () => `tus-${randomBytes(5).toString('hex')}`;
  const abs = (loc: string | null) => new URL(loc ?? '', `${srv.url}/api/upload/`).toString();

  it('is listed once in /docs, without the trailing slash that clients may also send', async () => {
    const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as { paths: Record<string, object> };
    const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/api/upload'));
    assert.deepEqual(paths.sort(), ['/api/upload', '/api/upload/{id}']);
    assert.deepEqual(Object.keys(doc.paths['/api/upload'] ?? {}).sort(), ['options', 'post']);
  });

  it('answers OPTIONS with the version, extensions, size limit and CORS preflight', async () => {
    for (const path of ['/api/upload/', '/api/upload', `/api/upload/${'a'.repeat(32)}`]) {
      const res = await fetch(`${srv.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH' },
      });
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('tus-resumable'), '1.0.0');
      assert.equal(res.headers.get('tus-version'), '1.0.0');
      assert.deepEqual(res.headers.get('tus-extension')?.split(','), [
        'creation',
        'termination',
        'expiration',
      ]);
      assert.equal(res.headers.get('tus-max-size'), String(MAX));
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.match(res.headers.get('access-control-allow-methods') ?? '', /PATCH/);
      for (const h of ['Upload-Offset', 'Upload-Metadata', 'Tus-Resumable', 'X-Owner-Token'])
        assert.match(res.headers.get('access-control-allow-headers') ?? '', new RegExp(h));
    }
  });

  it('creates, reports offsets, appends in parts and ends with the exact 2.1 result', async () => {
    const body = sample(300_000);
    const k = key();
    const created = await create(srv.url, body.length, {
      key: k,
      filename: 'report.log',
      filetype: 'text/plain',
    });
    assert.equal(created.status, 201, await created.text());
    assert.match(created.headers.get('location') ?? '', /^\/api\/upload\/[0-9a-f]{32}$/);
    assert.ok(Date.parse(created.headers.get('upload-expires') ?? '') > Date.now());
    for (const h of ['Location', 'Upload-Offset', 'X-Upload-Result', 'X-Owner-Token'])
      assert.match(created.headers.get('access-control-expose-headers') ?? '', new RegExp(h));
    const url = abs(created.headers.get('location'));

    const head0 = await fetch(url, { method: 'HEAD', headers: T });
    assert.equal(head0.status, 200);
    assert.equal(head0.headers.get('upload-offset'), '0');
    assert.equal(head0.headers.get('upload-length'), String(body.length));
    assert.equal(head0.headers.get('cache-control'), 'no-store');
    assert.match(head0.headers.get('upload-metadata') ?? '', /^key /);

    const p1 = await patch(url, 0, body.subarray(0, 100_000));
    assert.equal(p1.status, 204);
    assert.equal(p1.headers.get('upload-offset'), '100000');
    assert.ok(p1.headers.get('upload-expires'));
    assert.equal(p1.headers.get('x-upload-result'), null);
    // A stale offset is refused with 409, and nothing is written.
    const stale = await patch(url, 0, body.subarray(0, 10));
    assert.equal(stale.status, 409);
    assert.equal((await stale.json()).success, false);
    assert.equal((await fetch(url, { method: 'HEAD', headers: T })).headers.get('upload-offset'), '100000');
    // Not finished yet: no result.
    assert.equal((await fetch(url)).status, 409);

    const p2 = await patch(url, 100_000, body.subarray(100_000));
    assert.equal(p2.status, 204);
    assert.equal(p2.headers.get('upload-offset'), String(body.length));
    assert.match(p2.headers.get('x-owner-token') ?? '', /^[A-Za-z0-9_-]{32}$/);
    const result = decodeResult(p2);
    const ref = await reference(srv.url, body, 'report.log', 'text/plain');
    assert.deepEqual(result, { ...ref, data: { ...ref.data, key: k } });
    assert.equal(result.data.file_info.compressed, true);
    const got = await fetch(url);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), JSON.stringify(result));
    const file = await fetch(`${srv.url}/api/file/${k}`);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), body);
    assert.match(file.headers.get('content-disposition') ?? '', /report\.log/);
    // The parts are gone once the file is stored.
    const head = await fetch(url, { method: 'HEAD', headers: T });
    assert.equal(head.headers.get('upload-offset'), String(body.length));
    assert.equal(head.headers.get('upload-expires'), null);
  });

  it('keeps the bytes of a PATCH cut mid-body and resumes from the stored offset', async () => {
    const body = sample(1_000_000);
    const k = key();
    const url = abs(
      (await create(srv.url, body.length, { key: k, filename: 'cut.bin' })).headers.get('location'),
    );
    await cutPatch(url, 0, body, 400_000);
    const head = await fetch(url, { method: 'HEAD', headers: T });
    const offset = Number(head.headers.get('upload-offset'));
    // Every byte that reached the server before the cut is kept, also the ones still waiting in
    // the request's buffer when the cut came (the sender had handed all 400 KB to the kernel).
    assert.equal(offset, 400_000);
    const rest = await patch(url, offset, body.subarray(offset));
    assert.equal(rest.status, 204);
    assert.equal(decodeResult(rest).data.file_info.size, body.length);
    const file = await fetch(`${srv.url}/api/file/${k}`);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), body);
  });

  it('refuses a second PATCH while one is writing (423), then goes on', async () => {
    const body = sample(200_000);
    const url = abs((await create(srv.url, body.length, { key: key() })).headers.get('location'));
    // A connection of its own: a pooled keep-alive socket the server is closing would lose the PATCH.
    const req = request(url, {
      method: 'PATCH',
      agent: false,
      headers: {
        ...T,
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
        'content-length': String(body.length),
      },
    });
    let failed: Error | undefined;
    req.on('error', (err) => {
      failed = err;
    });
    req.on('response', (res) => {
      failed = new Error(`answered ${res.statusCode} before its body was sent`);
    });
    req.write(body.subarray(0, 1000));
    // The first PATCH holds the lock once its headers are in: wait until a HEAD is turned away.
    let busy = 0;
    for (let i = 0; i < 200 && busy !== 423 && !failed; i++) {
      busy = (await fetch(url, { method: 'HEAD', headers: T })).status;
      if (busy !== 423) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(
      busy,
      423,
      failed ? `the first PATCH failed: ${failed.message}` : 'the first PATCH never held the upload',
    );
    const second = await patch(url, 0, body.subarray(0, 10));
    assert.equal(second.status, 423);
    assert.equal(second.headers.get('retry-after'), '1');
    req.destroy();
    let head = await fetch(url, { method: 'HEAD', headers: T });
    for (let i = 0; i < 50 && head.status === 423; i++)
      head = await fetch(url, { method: 'HEAD', headers: T });
    assert.equal(head.status, 200);
    const offset = Number(head.headers.get('upload-offset'));
    assert.equal((await patch(url, offset, body.subarray(offset))).status, 204);
  });

  it('answers protocol errors: 412 without Tus-Resumable, 415 wrong type, 400 bad offsets, 413 past the length', async () => {
    const url = abs((await create(srv.url, 10, { key: key() })).headers.get('location'));
    const noTus = await fetch(url, { method: 'HEAD' });
    assert.equal(noTus.status, 412);
    assert.equal(noTus.headers.get('tus-version'), '1.0.0');
    const oldTus = await fetch(`${srv.url}/api/upload/`, {
      method: 'POST',
      headers: { 'tus-resumable': '0.2.2', 'upload-length': '1' },
    });
    assert.equal(oldTus.status, 412);
    const wrongType = await patch(url, 0, Buffer.from('x'), { 'content-type': 'application/octet-stream' });
    assert.equal(wrongType.status, 415);
    assert.deepEqual(await wrongType.json(), {
      success: false,
      message: 'PATCH bodies must be application/offset+octet-stream',
    });
    for (const off of ['-1', 'abc', '1.5', '', '99999999999999999999'])
      assert.equal((await patch(url, 0, Buffer.from('x'), { 'upload-offset': off })).status, 400, off);
    assert.equal((await patch(url, 0, Buffer.alloc(11))).status, 413);
    assert.equal((await fetch(url, { method: 'HEAD', headers: T })).headers.get('upload-offset'), '0');
    assert.equal((await patch(url, 0, Buffer.alloc(10))).status, 204);
  });

  it('refuses hostile creations with 400 (or 413) in the file envelope', async () => {
    const table: [Record<string, string>, number][] = [
      [{ 'upload-length': '-1' }, 400],
      [{ 'upload-length': 'ten' }, 400],
      [{ 'upload-length': String(MAX + 1) }, 413],
      [{}, 400],
      [{ 'upload-length': '1', 'upload-defer-length': '1' }, 400],
      [{ 'upload-length': '1', 'upload-concat': 'final;/a /b' }, 400],
      [{ 'upload-length': '1', 'upload-metadata': 'key not*base64' }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('a')},key ${b64('b')}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('../etc/passwd')}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('.env')}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('a\r\nb')}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `filetype ${b64('text/plain')}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('x'.repeat(4000))}` }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('ok')}`, 'max-downloads': '-3' }, 400],
      [{ 'upload-length': '1', 'upload-metadata': `key ${b64('ok')},max_days ${b64('__proto__')}` }, 400],
    ];
    for (const [h, status] of table) {
      const res = await fetch(`${srv.url}/api/upload/`, { method: 'POST', headers: { ...T, ...h } });
      assert.equal(res.status, status, JSON.stringify(h));
      assert.equal((await res.json()).success, false);
    }
    for (const id of ['x', '../../files/a', 'A'.repeat(32), `${'a'.repeat(32)}%2f..`])
      assert.equal(
        (await fetch(`${srv.url}/api/upload/${id}`, { method: 'HEAD', headers: T })).status,
        404,
        id,
      );
  });

  it('derives the key from the file name (Uppy metadata) and carries Max-Downloads', async () => {
    const body = Buffer.from('uppy sends name, type, filename and filetype');
    const res = await create(srv.url, body.length, {
      name: 'My Notes (1).txt',
      filename: 'My Notes (1).txt',
      filetype: 'text/plain',
      max_downloads: '1',
    });
    assert.equal(res.status, 201, await res.text());
    const done = await patch(abs(res.headers.get('location')), 0, body);
    const json = decodeResult(done);
    assert.equal(json.data.key, 'My-Notes-1-.txt');
    assert.equal(json.data.file_info.filename, 'My Notes (1).txt');
    assert.equal(json.data.lifetime.max_downloads, 1);
    assert.equal((await fetch(`${srv.url}/api/file/My-Notes-1-.txt`)).status, 200);
    assert.equal((await fetch(`${srv.url}/api/file/My-Notes-1-.txt`)).status, 404);
  });

  it('keeps an existing key: 409 at creation without its owner token, replaced with it', async () => {
    const k = key();
    const form = new FormData();
    form.append('file', new Blob(['first']), 'first.txt');
    const first = await fetch(`${srv.url}/api/file/${k}`, { method: 'POST', body: form });
    const token = first.headers.get('x-owner-token') ?? '';
    assert.equal((await create(srv.url, 6, { key: k })).status, 409);
    const res = await create(srv.url, 6, { key: k, filename: 'second.txt' }, { 'x-owner-token': token });
    assert.equal(res.status, 201);
    // The owner token is checked again when the upload completes.
    const url = abs(res.headers.get('location'));
    const without = await patch(url, 0, Buffer.from('second'));
    assert.equal(without.status, 409);
    assert.equal(without.headers.get('upload-offset'), '0');
    assert.equal(await (await fetch(`${srv.url}/api/file/${k}`)).text(), 'first');
    const done = await patch(url, 0, Buffer.from('second'), { 'x-owner-token': token });
    assert.equal(done.status, 204);
    assert.equal(done.headers.get('x-owner-token'), null);
    assert.equal(await (await fetch(`${srv.url}/api/file/${k}`)).text(), 'second');
  });

  it('terminates an upload with DELETE and forgets it', async () => {
    const url = abs((await create(srv.url, 100, { key: key() })).headers.get('location'));
    assert.equal((await patch(url, 0, Buffer.alloc(40))).status, 204);
    const id = url.split('/').pop() ?? '';
    assert.ok(existsSync(join(dataDir, 'blobs', 'uploads', id)));
    const del = await fetch(url, { method: 'DELETE', headers: T });
    assert.equal(del.status, 204);
    assert.equal((await fetch(url, { method: 'HEAD', headers: T })).status, 404);
    assert.equal((await patch(url, 40, Buffer.alloc(60))).status, 404);
    assert.equal((await fetch(url, { method: 'DELETE', headers: T })).status, 404);
  });

  it('expires an unfinished upload after its Upload-Expires', async () => {
    const res = await create(srv.url, 100, { key: key() });
    const url = abs(res.headers.get('location'));
    assert.equal((await patch(url, 0, Buffer.alloc(10))).status, 204);
    skew += 3601_000;
    const head = await fetch(url, { method: 'HEAD', headers: T });
    assert.equal(head.status, 404);
    assert.equal((await patch(url, 10, Buffer.alloc(90))).status, 404);
    const dir = join(dataDir, 'blobs', 'uploads', url.split('/').pop() ?? '');
    assert.equal(existsSync(dir), false, 'not even an empty directory is left');
    skew = 0;
  });

  it('completes a zero-length upload at creation into an empty file, with the 2.1 result', async () => {
    const k = key();
    const created = await create(srv.url, 0, { key: k, filename: 'empty.txt', filetype: 'text/plain' });
    assert.equal(created.status, 201, await created.text());
    assert.match(created.headers.get('x-owner-token') ?? '', /^[A-Za-z0-9_-]{32}$/);
    const result = decodeResult(created);
    const ref = await reference(srv.url, Buffer.alloc(0), 'empty.txt', 'text/plain');
    assert.deepEqual(result, { ...ref, data: { ...ref.data, key: k } });
    const file = await fetch(`${srv.url}/api/file/${k}`);
    assert.equal(file.status, 200);
    assert.equal((await file.arrayBuffer()).byteLength, 0);
    assert.match(file.headers.get('content-disposition') ?? '', /empty\.txt/);
    const url = abs(created.headers.get('location'));
    const head = await fetch(url, { method: 'HEAD', headers: T });
    assert.equal(head.headers.get('upload-offset'), '0');
    assert.equal(head.headers.get('upload-length'), '0');
    assert.deepEqual(await (await fetch(url)).json(), result);
    // A client that sends the (empty) final PATCH anyway gets the same result, and nothing changes.
    const again = await patch(url, 0, Buffer.alloc(0));
    assert.equal(again.status, 204);
    assert.deepEqual(decodeResult(again), result);
  });

  it('completes an empty file sent by tus-js-client (which sends no PATCH for it)', async () => {
    const k = key();
    const done = await new Promise<{ token: string | undefined; url: string }>((resolve, reject) => {
      const up: tus.Upload = new tus.Upload(Buffer.alloc(0), {
        endpoint: `${srv.url}/api/upload/`,
        metadata: { key: k, filename: 'nothing.bin' },
        retryDelays: [],
        onError: reject,
        onSuccess: (p) => resolve({ token: p.lastResponse.getHeader('X-Owner-Token'), url: up.url ?? '' }),
      });
      up.start();
    });
    assert.match(done.token ?? '', /^[A-Za-z0-9_-]{32}$/);
    const file = await fetch(`${srv.url}/api/file/${k}`);
    assert.equal(file.status, 200);
    assert.equal((await file.arrayBuffer()).byteLength, 0);
    assert.equal((await (await fetch(done.url)).json()).data.key, k);
  });

  it('leaves nothing behind an upload that ended, was terminated or expired', async () => {
    const uploadsDir = join(dataDir, 'blobs', 'uploads');
    const ids = (urls: string[]) => urls.map((u) => u.split('/').pop() ?? '');
    // Ended (a file and a zero-length one), terminated, and one abandoned after a part.
    const ended = abs((await create(srv.url, 5, { key: key() })).headers.get('location'));
    assert.equal((await patch(ended, 0, Buffer.from('hello'))).status, 204);
    const empty = abs((await create(srv.url, 0, { key: key() })).headers.get('location'));
    const gone = abs((await create(srv.url, 50, { key: key() })).headers.get('location'));
    assert.equal((await patch(gone, 0, Buffer.alloc(20))).status, 204);
    assert.equal((await fetch(gone, { method: 'DELETE', headers: T })).status, 204);
    const abandoned = abs((await create(srv.url, 50, { key: key() })).headers.get('location'));
    assert.equal((await patch(abandoned, 0, Buffer.alloc(20))).status, 204);
    const mine = ids([ended, empty, gone, abandoned]);
    const present = () =>
      existsSync(uploadsDir) ? readdirSync(uploadsDir).filter((d) => mine.includes(d)) : [];
    assert.equal(existsSync(join(uploadsDir, ids([gone])[0] ?? '')), false, 'terminated: no directory');
    // Past their expiry every one of them goes, results and directories included.
    skew += 3601_000;
    try {
      for (const u of [ended, empty, abandoned]) assert.equal((await fetch(u)).status, 404);
      assert.deepEqual(present(), []);
    } finally {
      skew -= 3601_000;
    }
  });

  it('works with tus-js-client, including X-HTTP-Method-Override and a resume', async () => {
    const body = sample(600_000);
    const k = key();
    const run = (o: Partial<tus.UploadOptions>) =>
      new Promise<{ url: string; result?: unknown; token?: string | undefined }>((resolve, reject) => {
        const up: tus.Upload = new tus.Upload(body, {
          endpoint: `${srv.url}/api/upload/`,
          metadata: { key: k, filename: 'client.bin', filetype: 'application/octet-stream' },
          retryDelays: [],
          ...o,
          onError: reject,
          onSuccess: (p) => {
            const h = p.lastResponse.getHeader('X-Upload-Result');
            resolve({
              url: up.url ?? '',
              ...(h ? { result: JSON.parse(Buffer.from(h, 'base64').toString()) } : {}),
              token: p.lastResponse.getHeader('X-Owner-Token'),
            });
          },
          onChunkComplete: o.onChunkComplete ?? (() => {}),
        });
        if (o.onProgress === undefined) up.start();
        else {
          // The first run stops itself after two chunks (what a dropped connection leaves).
          let chunks = 0;
          up.options.onChunkComplete = () => {
            if (++chunks === 2) up.abort().then(() => resolve({ url: up.url ?? '' }), reject);
          };
          up.start();
        }
      });
    const first = await run({ chunkSize: 100_000, onProgress: () => {} });
    const head = await fetch(first.url, { method: 'HEAD', headers: T });
    assert.equal(head.headers.get('upload-offset'), '200000');
    const done = await run({ uploadUrl: first.url, overridePatchMethod: true });
    assert.equal(done.url, first.url);
    assert.equal((done.result as { data: { key: string } }).data.key, k);
    assert.match(done.token ?? '', /^[A-Za-z0-9_-]{32}$/);
    assert.deepEqual(done.result, await (await fetch(first.url)).json());
    const file = await fetch(`${srv.url}/api/file/${k}`);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), body);
  });
});

describe('tus uploads under the files quota', () => {
  let srv: Running;
  before(async () => {
    srv = await startTestServer({ overrides: { files: { quotaBytes: 100_000, codec: 'none' } } });
  });
  after(() => srv.close());
  const abs = (loc: string | null) => new URL(loc ?? '', `${srv.url}/api/upload/`).toString();

  it('reserves the parts as they arrive, hands their space to the file, and frees it on delete', async () => {
    const a = await create(srv.url, 80_000, { key: 'quota-a' });
    const b = await create(srv.url, 80_000, { key: 'quota-b' });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    const urlA = abs(a.headers.get('location'));
    const urlB = abs(b.headers.get('location'));
    const body = randomBytes(80_000);
    assert.equal((await patch(urlA, 0, body.subarray(0, 50_000))).status, 204);
    // 50 000 bytes of A's parts are stored: 60 000 more for B do not fit.
    const full = await patch(urlB, 0, body.subarray(0, 60_000));
    assert.equal(full.status, 507);
    assert.deepEqual(await full.json(), {
      success: false,
      message: 'storage quota of 97.66 KiB (100000 bytes) is full',
    });
    assert.equal((await fetch(urlB, { method: 'HEAD', headers: T })).headers.get('upload-offset'), '0');
    // A completes: the file's reservation takes over the space of its parts.
    const done = await patch(urlA, 50_000, body.subarray(50_000));
    assert.equal(done.status, 204, await done.text());
    assert.equal((await create(srv.url, 30_000, { key: 'quota-c' })).status, 507);
    const del = await fetch(`${srv.url}/api/file/quota-a`, {
      method: 'DELETE',
      headers: { 'x-owner-token': done.headers.get('x-owner-token') ?? '' },
    });
    assert.equal(del.status, 200);
    assert.equal((await patch(urlB, 0, body.subarray(0, 60_000))).status, 204);
    // Terminating B gives its parts' space back.
    assert.equal((await create(srv.url, 90_000, { key: 'quota-d' })).status, 507);
    assert.equal((await fetch(urlB, { method: 'DELETE', headers: T })).status, 204);
    assert.equal((await create(srv.url, 90_000, { key: 'quota-d' })).status, 201);
  });
});

describe('a PATCH body cut while the server is behind', () => {
  it('keeps the bytes still waiting in the request buffer when the connection is cut', async () => {
    const sent = sample(400_000);
    let got: Buffer | null = null;
    const server = createServer(async (req, res) => {
      // A slow disk: reading starts late and each chunk takes a while to write, so the cut comes
      // while most of the body still waits in the request's buffer.
      await new Promise((r) => setTimeout(r, 500));
      const parts: Buffer[] = [];
      for await (const c of received(req, 1_000_000, null)) {
        parts.push(c);
        await new Promise((r) => setTimeout(r, 1));
      }
      got = Buffer.concat(parts);
      res.destroy();
      server.close();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const closed = new Promise((r) => server.once('close', r));
    const { port } = server.address() as AddressInfo;
    const req = request({
      port,
      host: '127.0.0.1',
      method: 'PATCH',
      headers: { 'content-length': '1000000' },
    });
    req.on('error', () => {});
    req.write(sent, () => setTimeout(() => req.destroy(), 100));
    await closed;
    assert.ok(got, 'the handler finished');
    // Without draining the buffer after the cut, Node 20 and 26 both lose its last 14-44 KB.
    assert.equal((got as Buffer).length, sent.length);
    assert.ok((got as Buffer).equals(sent));
  });
});

// The file API end to end with real clients (curl, fetch, node:http), run against both backends:
// local disk and S3 (a local s3rver started by the test).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { brotliDecompressSync } from 'node:zlib';
import sharp from 'sharp';
import { type S3Handle, startS3 } from '../../../test/fixtures/files/s3.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import type { FileInfo } from './store.ts';

const run = promisify(execFile);
const MAX = 1024 * 1024;

/** A realistic text file: log lines that compress well but not trivially. */
function textCorpus(lines = 4000): Buffer {
  const out: string[] = [];
  for (let i = 0; i < lines; i++)
    out.push(
      `2026-11-21T10:${String(i % 60).padStart(2, '0')}:00Z INFO req=${i * 7919} path=/api/v1/items/${i % 97} status=${i % 5 ? 200 : 404} ms=${(i * 31) % 997}`,
    );
  return Buffer.from(`${out.join('\n')}\n`);
}

interface UploadJson {
  success: boolean;
  message: string;
  data: { key: string; file_info: FileInfo };
}

async function upload(
  base: string,
  key: string,
  body: Buffer,
  o: { name?: string; type?: string; headers?: Record<string, string> } = {},
) {
  const form = new FormData();
  form.append(
    'file',
    new Blob([new Uint8Array(body)], o.type ? { type: o.type } : {}),
    o.name ?? 'upload.bin',
  );
  const res = await fetch(`${base}/api/file/${key}`, {
    method: 'POST',
    body: form,
    headers: o.headers ?? {},
  });
  return { res, json: (await res.json()) as UploadJson };
}

async function download(base: string, key: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/api/file/${key}`, { headers });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

/** POSTs a multipart body without Content-Length that goes on past `send` bytes and never ends by itself. */
function streamingUpload(url: string, send: number): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const boundary = 'xBOUNDARYx';
    const req = request(url, {
      method: 'POST',
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    let sent = 0;
    let done = false;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    req.on('response', (res) => {
      // The answer's headers are here: stop feeding (the server drains what it does not read, so a
      // sender that waited for the answer's end could push the whole body through meanwhile).
      done = true;
      const atAnswer = sent;
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, sent: atAnswer });
        req.destroy();
      });
    });
    req.on('error', (err) => {
      if (!done) reject(err);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n`);
    const pump = () => {
      // Stop feeding once well past the limit but keep the request open: only an early answer ends it.
      while (!done && sent < send) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
    };
    pump();
  });
}

for (const backend of ['fs', 's3'] as const) {
  describe(`file API (${backend})`, { skip: toolSkip('curl') }, () => {
    let srv: Running;
    let s3: S3Handle | undefined;
    let dataDir: string;
    const logs = new LogCapture();
    const text = textCorpus();

    before(async () => {
      s3 = backend === 's3' ? await startS3() : undefined;
      dataDir = tempDir();
      srv = await startTestServer({
        logs,
        overrides: {
          server: { dataDir },
          files: { maxBytes: MAX, rateLimit: 'off' },
          ...(s3 ? { storage: s3.overrides } : {}),
        },
      });
    });
    after(async () => {
      await srv?.close();
      await s3?.close();
    });

    it('compresses a text upload, reports the ratio and gives it back byte-identical under its name (curl -OJ)', async () => {
      const dir = tempDir();
      writeFileSync(join(dir, 'server log ü.txt'), text);
      const up = await run('curl', [
        '-sS',
        '-i',
        '-F',
        `file=@${join(dir, 'server log ü.txt')}`,
        `${srv.url}/api/file/log1.txt`,
      ]);
      const [head = '', body = ''] = up.stdout.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 200/);
      assert.match(head, /\r\nx-owner-token: [A-Za-z0-9_-]{32}\r\n/i);
      const json = JSON.parse(body);
      assert.equal(json.success, true);
      assert.equal(json.data.key, 'log1.txt');
      const fi = json.data.file_info;
      assert.equal(fi.filename, 'server log ü.txt');
      assert.equal(fi.mimetype, 'text/plain');
      assert.equal(fi.size, text.length);
      assert.equal(fi.original_size, text.length);
      assert.equal(fi.compressed, true);
      assert.ok(fi.compressed_size > 0 && fi.compressed_size < text.length / 2);
      assert.match(fi.compression_ratio, /^\d{1,2}\.\d{2}%$/);
      assert.equal(fi.compression_ratio, `${((1 - fi.compressed_size / fi.size) * 100).toFixed(2)}%`);
      const out = tempDir();
      await run('curl', ['-sS', '-f', '-OJ', `${srv.url}/api/file/log1.txt`], { cwd: out });
      assert.deepEqual(readdirSync(out), ['server log ü.txt']);
      assert.ok(readFileSync(join(out, 'server log ü.txt')).equals(text));
    });

    it('stores a JPEG as is with "0.00%"', async () => {
      const jpeg = await sharp(randomBytes(128 * 128 * 3), { raw: { width: 128, height: 128, channels: 3 } })
        .jpeg()
        .toBuffer();
      const { res, json } = await upload(srv.url, 'photo', jpeg, { name: 'photo.jpg', type: 'image/jpeg' });
      assert.equal(res.status, 200);
      assert.deepEqual(json.data.file_info, {
        filename: 'photo.jpg',
        mimetype: 'image/jpeg',
        size: jpeg.length,
        original_size: jpeg.length,
        compressed: false,
        compressed_size: jpeg.length,
        compression_ratio: '0.00%',
      });
      const got = await download(srv.url, 'photo', { 'accept-encoding': 'br, gzip' });
      assert.equal(got.res.headers.get('content-encoding'), null);
      assert.ok(got.body.equals(jpeg));
    });

    it('keeps the plain copy when the whole file does not compress as well as its sample promised', async () => {
      const mixed = Buffer.concat([text.subarray(0, 64 * 1024), randomBytes(700 * 1024)]);
      const { json } = await upload(srv.url, 'mixed', mixed, { type: 'application/octet-stream' });
      assert.equal(json.data.file_info.compressed, false);
      assert.equal(json.data.file_info.compression_ratio, '0.00%');
      assert.equal(json.data.file_info.compressed_size, mixed.length);
      assert.ok((await download(srv.url, 'mixed')).body.equals(mixed));
    });

    it('sends the stored brotli bytes to clients that accept br and decoded bytes to others', async () => {
      await upload(srv.url, 'enc', text, { name: 'a.txt', type: 'text/plain' });
      const raw = await fetch(`${srv.url}/api/file/enc`, { headers: { 'accept-encoding': 'br' } });
      assert.equal(raw.headers.get('content-encoding'), 'br');
      assert.match(raw.headers.get('vary') ?? '', /accept-encoding/i);
      // fetch decodes br itself; the bytes must still be the original.
      assert.ok(Buffer.from(await raw.arrayBuffer()).equals(text));
      const curl = await run('curl', ['-sS', '-H', 'Accept-Encoding: br', `${srv.url}/api/file/enc`], {
        encoding: 'buffer',
        maxBuffer: 8 * MAX,
      });
      assert.ok(curl.stdout.length < text.length);
      assert.ok(brotliDecompressSync(curl.stdout).equals(text));
      const plain = await download(srv.url, 'enc', { 'accept-encoding': 'identity' });
      assert.equal(plain.res.headers.get('content-encoding'), null);
      assert.equal(plain.res.headers.get('content-length'), String(text.length));
      assert.ok(plain.body.equals(text));
    });

    it('answers ranges (206, suffix, 416), conditionals (304) and HEAD on a compressed file', async () => {
      await upload(srv.url, 'rng', text, { name: 'r.txt', type: 'text/plain' });
      const a = await download(srv.url, 'rng', { range: 'bytes=1000-1999' });
      assert.equal(a.res.status, 206);
      assert.equal(a.res.headers.get('content-range'), `bytes 1000-1999/${text.length}`);
      assert.ok(a.body.equals(text.subarray(1000, 2000)));
      const s = await download(srv.url, 'rng', { range: 'bytes=-10' });
      assert.equal(s.res.status, 206);
      assert.ok(s.body.equals(text.subarray(text.length - 10)));
      const bad = await download(srv.url, 'rng', { range: `bytes=${text.length}-` });
      assert.equal(bad.res.status, 416);
      assert.equal(bad.res.headers.get('content-range'), `bytes */${text.length}`);
      const full = await download(srv.url, 'rng');
      const etag = full.res.headers.get('etag') ?? '';
      assert.match(etag, /^"[0-9a-f]{32}"$/);
      assert.equal(full.res.headers.get('accept-ranges'), 'bytes');
      assert.equal((await download(srv.url, 'rng', { 'if-none-match': etag })).res.status, 304);
      const lm = full.res.headers.get('last-modified') ?? '';
      assert.equal((await download(srv.url, 'rng', { 'if-modified-since': lm })).res.status, 304);
      assert.equal((await download(srv.url, 'rng', { 'if-none-match': '"other"' })).res.status, 200);
      const stale = await download(srv.url, 'rng', { range: 'bytes=0-9', 'if-range': '"other"' });
      assert.equal(stale.res.status, 200);
      const head = await fetch(`${srv.url}/api/file/rng`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(text.length));
      assert.equal(head.headers.get('etag'), etag);
      // The rest of infra/http's tables, through this route (RFC 9110 13 and 14).
      const failed = await download(srv.url, 'rng', { 'if-match': '"other"' });
      assert.equal(failed.res.status, 412);
      assert.deepEqual(JSON.parse(failed.body.toString()), {
        success: false,
        message: 'the file does not match If-Match or If-Unmodified-Since',
      });
      assert.equal((await download(srv.url, 'rng', { 'if-match': etag })).res.status, 200);
      const invalid = await download(srv.url, 'rng', { range: 'bytes=5-3' });
      assert.equal(invalid.res.status, 200, 'an invalid Range is ignored');
      const several = await download(srv.url, 'rng', { range: 'bytes=0-1,10-11' });
      assert.equal(several.res.status, 200, 'several ranges are answered whole');
      const merged = await download(srv.url, 'rng', { range: 'bytes=0-1,2-3' });
      assert.equal(merged.res.status, 206);
      assert.equal(merged.res.headers.get('content-range'), `bytes 0-3/${text.length}`);
      const headRange = await fetch(`${srv.url}/api/file/rng`, {
        method: 'HEAD',
        headers: { range: 'bytes=0-9' },
      });
      assert.equal(headRange.status, 200, 'HEAD has no range handling');
    });

    it('resumes an interrupted download with curl -C -', async () => {
      await upload(srv.url, 'resume', text, { name: 'r.txt', type: 'text/plain' });
      const dir = tempDir();
      writeFileSync(join(dir, 'part'), text.subarray(0, 12345));
      await run('curl', ['-sS', '-f', '-C', '-', '-o', 'part', `${srv.url}/api/file/resume`], { cwd: dir });
      assert.ok(readFileSync(join(dir, 'part')).equals(text));
    });

    it('answers bad keys with 400 in the file envelope', async () => {
      for (const key of [
        '.hidden',
        'a'.repeat(129),
        'a%2Fb',
        'a%20b',
        '%C3%A4',
        'a/b',
        '',
        'a%00b',
        'x%0d%0aSet-Cookie:1',
      ]) {
        const { res, json } = await upload(srv.url, key, Buffer.from('x'));
        assert.equal(res.status, 400, key);
        assert.deepEqual(Object.keys(json).sort(), ['message', 'success'], key);
        assert.equal(json.success, false);
        assert.equal((await download(srv.url, key)).res.status, 400, key);
      }
      assert.equal((await upload(srv.url, `A${'b'.repeat(127)}`, Buffer.from('x'))).res.status, 200);
      // Raw paths that fetch would normalise away.
      for (const path of ['/api/file/..', '/api/file/../../etc/passwd', '/api/file/.', '/api/file/%2e%2e']) {
        const status = await new Promise<number>((resolve, reject) => {
          request({ host: '127.0.0.1', port: srv.port, path }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
            .on('error', reject)
            .end();
        });
        assert.equal(status, 400, path);
      }
    });

    it('refuses a missing file part, two files, other field names and non-multipart bodies with 400', async () => {
      const post = (body: BodyInit, headers: Record<string, string> = {}) =>
        fetch(`${srv.url}/api/file/p1`, { method: 'POST', body, headers });
      const fields = new FormData();
      fields.append('note', 'hi');
      const two = new FormData();
      two.append('file', new Blob(['a']), 'a.txt');
      two.append('file', new Blob(['b']), 'b.txt');
      const other = new FormData();
      other.append('upload', new Blob(['a']), 'a.txt');
      const cases: [string, Response][] = [
        ['fields only', await post(fields)],
        ['two files', await post(two)],
        ['wrong name', await post(other)],
        ['json', await post('{"file":"x"}', { 'content-type': 'application/json' })],
        ['octet-stream', await post('raw', { 'content-type': 'application/octet-stream' })],
        ['no body', await fetch(`${srv.url}/api/file/p1`, { method: 'POST' })],
        ['no boundary', await post('x', { 'content-type': 'multipart/form-data' })],
        ['garbage', await post('hello world', { 'content-type': 'multipart/form-data; boundary=zz' })],
        [
          'truncated part',
          await post('--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc', {
            'content-type': 'multipart/form-data; boundary=zz',
          }),
        ],
        [
          'bad part header',
          await post('--zz\r\nContent-Disposition form-data\r\n\r\nabc\r\n--zz--\r\n', {
            'content-type': 'multipart/form-data; boundary=zz',
          }),
        ],
        [
          'multipart/mixed',
          await post(
            '--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc\r\n--zz--\r\n',
            {
              'content-type': 'multipart/mixed; boundary=zz',
            },
          ),
        ],
      ];
      for (const [name, res] of cases) {
        assert.equal(res.status, 400, name);
        const json = (await res.json()) as { success: boolean };
        assert.equal(json.success, false, name);
      }
      assert.equal((await download(srv.url, 'p1')).res.status, 404);
    });

    it('answers a truncated part that arrives whole (the part fails before the upload reads it) with 400', async () => {
      // Over a socket the part's error comes after the route listens for it; a body handed over in
      // one piece fails the part at once (the property test found a 500 here, on both routes).
      const payload =
        '--zz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a fi';
      for (const url of ['/api/file/p2', '/']) {
        const r = await srv.app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'multipart/form-data; boundary=zz' },
          payload,
        });
        assert.equal(r.statusCode, 400, `${url}: ${r.body}`);
        assert.match(r.body, /malformed multipart body/, url);
      }
      assert.equal((await download(srv.url, 'p2')).res.status, 404);
    });

    it('answers an oversized upload with 413 before the client finishes sending, storing nothing', async () => {
      const r = await streamingUpload(`${srv.url}/api/file/huge`, 256 * MAX);
      assert.equal(r.status, 413);
      assert.deepEqual(JSON.parse(r.body), {
        success: false,
        message: 'file exceeds the upload limit of 1 MiB',
      });
      assert.ok(r.sent < 256 * MAX, `answered while the body was still coming (${r.sent} bytes sent)`);
      assert.equal((await download(srv.url, 'huge')).res.status, 404);
      const declared = await upload(srv.url, 'huge2', Buffer.alloc(MAX + 100 * 1024));
      assert.equal(declared.res.status, 413);
    });

    it('never overwrites without the owner token; with it (header or Bearer) replaces, and says so; oversize keeps the old', async () => {
      const first = await upload(srv.url, 'owned', Buffer.from('first version'), { name: 'v1.txt' });
      assert.equal(first.json.message, 'file uploaded');
      const token = first.res.headers.get('x-owner-token') ?? '';
      assert.match(token, /^[A-Za-z0-9_-]{32}$/);
      const refused: Record<string, string>[] = [
        {},
        { 'x-owner-token': 'wrong' },
        { authorization: 'Bearer wrong' },
      ];
      for (const headers of refused) {
        const r = await upload(srv.url, 'owned', Buffer.from('evil'), { headers });
        assert.equal(r.res.status, 409);
        assert.equal(r.json.success, false);
      }
      assert.equal((await download(srv.url, 'owned')).body.toString(), 'first version');
      const big = await upload(srv.url, 'owned', Buffer.alloc(MAX + 1), {
        headers: { 'x-owner-token': token },
      });
      assert.equal(big.res.status, 413);
      assert.equal((await download(srv.url, 'owned')).body.toString(), 'first version');
      const second = await upload(srv.url, 'owned', Buffer.from('second'), {
        name: 'v2.txt',
        headers: { 'x-owner-token': token },
      });
      assert.equal(second.res.status, 200);
      assert.equal(second.json.message, 'file replaced');
      assert.equal(second.res.headers.get('x-owner-token'), null);
      const got = await download(srv.url, 'owned');
      assert.equal(got.body.toString(), 'second');
      assert.match(got.res.headers.get('content-disposition') ?? '', /filename="v2\.txt"/);
      const third = await upload(srv.url, 'owned', Buffer.from('third'), {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(third.res.status, 200);
      assert.equal((await download(srv.url, 'owned')).body.toString(), 'third');
      // Keys are case-sensitive: another case is another file.
      assert.equal((await download(srv.url, 'OWNED')).res.status, 404);
    });

    it('lets one of two concurrent uploads to a new key win and answers the other 409', async () => {
      const [a, b] = await Promise.all([
        upload(srv.url, 'race', Buffer.from('A'.repeat(300_000))),
        upload(srv.url, 'race', Buffer.from('B'.repeat(300_000))),
      ]);
      assert.deepEqual([a.res.status, b.res.status].sort(), [200, 409]);
      const winner = a.res.status === 200 ? 'A' : 'B';
      const got = await download(srv.url, 'race');
      // Once (CI, Node 26, s3, busy machine) this answered 500: s3rver had answered the staging
      // PutObject before writing its bytes (fixed in the s3 fixture). Say why if it fails again.
      assert.equal(
        got.res.status,
        200,
        `${got.body.toString().slice(0, 300)}\n${logs.lines
          .filter((l) => /"level":[56]0/.test(l))
          .slice(-10)
          .join('\n')}`,
      );
      assert.equal(got.body.toString(), winner.repeat(300_000));
    });

    it('deletes with the owner token only', async () => {
      const up = await upload(srv.url, 'del', Buffer.from('bye'));
      const token = up.res.headers.get('x-owner-token') ?? '';
      const del = (h: Record<string, string>) =>
        fetch(`${srv.url}/api/file/del`, { method: 'DELETE', headers: h });
      assert.equal((await del({})).status, 403);
      assert.equal((await del({ 'x-owner-token': 'nope' })).status, 403);
      assert.equal((await del({ 'x-owner-token': token })).status, 200);
      assert.equal((await download(srv.url, 'del')).res.status, 404);
      assert.equal((await del({ 'x-owner-token': token })).status, 404);
    });

    it('serves stored HTML and SVG only as sandboxed attachments, and sniffs undeclared types', async () => {
      await upload(srv.url, 'page', Buffer.from('<html><script>alert(1)</script></html>'), {
        name: 'x.html',
        type: 'text/html',
      });
      const page = await download(srv.url, 'page');
      assert.match(page.res.headers.get('content-disposition') ?? '', /^attachment;/);
      assert.equal(page.res.headers.get('x-content-type-options'), 'nosniff');
      assert.match(page.res.headers.get('content-security-policy') ?? '', /sandbox/);
      const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } })
        .png()
        .toBuffer();
      const sniffed = await upload(srv.url, 'img', png, { name: 'noext', type: 'application/octet-stream' });
      assert.equal(sniffed.json.data.file_info.mimetype, 'image/png');
      const empty = await upload(srv.url, 'empty', Buffer.alloc(0), { name: 'e.txt' });
      assert.equal(empty.json.data.file_info.compression_ratio, '0.00%');
      assert.equal(empty.json.data.file_info.compressed, false);
      assert.equal((await download(srv.url, 'empty')).body.length, 0);
    });

    it('leaves nothing behind when the client aborts mid-upload', async () => {
      await new Promise<void>((resolve) => {
        const req = request(`${srv.url}/api/file/aborted`, {
          method: 'POST',
          headers: { 'content-type': 'multipart/form-data; boundary=zz', 'transfer-encoding': 'chunked' },
        });
        req.on('error', () => resolve());
        req.write('--zz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n');
        req.write(text.subarray(0, 100_000), () =>
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 200),
        );
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await download(srv.url, 'aborted')).res.status, 404);
      if (backend === 'fs') assert.deepEqual(readdirSync(join(dataDir, 'blobs', '.tmp')), []);
      else {
        // The staging object of the aborted (and the earlier oversized) uploads is removed.
        let staged = ['?'];
        for (let i = 0; i < 100 && staged.length; i++) {
          staged = [];
          for await (const e of srv.app.ctx.blobs.list('.staging/')) staged.push(e.key);
          if (staged.length) await new Promise((r) => setTimeout(r, 50));
        }
        assert.deepEqual(staged, []);
      }
    });

    // Several instances share a bucket (a disk is per host): only meaningful on S3.
    if (backend === 's3')
      it('shares one store between instances: another instance serves the file and enforces its token', async () => {
        const other = await startTestServer({
          overrides: {
            server: { dataDir: tempDir() },
            files: { maxBytes: MAX, rateLimit: 'off' },
            ...(s3 ? { storage: s3.overrides } : {}),
          },
        });
        try {
          const up = await upload(srv.url, 'shared', Buffer.from('from A'), { name: 'a.txt' });
          const token = up.res.headers.get('x-owner-token') ?? '';
          const got = await download(other.url, 'shared');
          assert.equal(got.body.toString(), 'from A');
          assert.equal((await upload(other.url, 'shared', Buffer.from('from B'))).res.status, 409);
          const ok = await upload(other.url, 'shared', Buffer.from('from B'), {
            headers: { 'x-owner-token': token },
          });
          assert.equal(ok.res.status, 200);
          assert.equal((await download(srv.url, 'shared')).body.toString(), 'from B');
        } finally {
          await other.close();
        }
      });

    it('keeps owner tokens out of the logs', async () => {
      const up = await upload(srv.url, 'secret', Buffer.from('s'));
      const token = up.res.headers.get('x-owner-token') ?? '';
      await upload(srv.url, 'secret', Buffer.from('t'), { headers: { authorization: `Bearer ${token}` } });
      assert.ok(token.length > 0);
      assert.ok(logs.lines.length > 0);
      assert.ok(!logs.text().includes(token));
    });
  });
}

describe('file API limits (fs)', () => {
  let srv: Running;
  before(async () => {
    srv = await startTestServer({ overrides: { files: { quotaBytes: 300_000, rateLimit: '3/min' } } });
  });
  after(() => srv?.close());

  it('answers 507 when the quota is full and 429 past the per-IP upload rate', async () => {
    const a = await upload(srv.url, 'q1', randomBytes(250_000));
    assert.equal(a.res.status, 200);
    const b = await upload(srv.url, 'q2', randomBytes(100_000));
    assert.equal(b.res.status, 507);
    assert.equal(b.json.success, false);
    assert.equal((await download(srv.url, 'q2')).res.status, 404);
    const c = await upload(srv.url, 'q3', randomBytes(10));
    assert.equal(c.res.status, 200, 'what fits still fits');
    const d = await upload(srv.url, 'q4', randomBytes(10));
    assert.equal(d.res.status, 429);
    assert.ok(Number(d.res.headers.get('retry-after')) >= 1);
    assert.equal(d.json.success, false);
  });
});

describe('file store start-up', () => {
  it('removes temporary files a killed upload left in the data directory', async () => {
    // The directory a killed upload left behind (no server needs to run first to lay it out: a
    // server that no longer cleans where uploads are staged leaves this file and fails the test).
    const dataDir = tempDir();
    mkdirSync(join(dataDir, 'blobs', '.tmp'), { recursive: true });
    const stale = join(dataDir, 'blobs', '.tmp', '999999999-killed-upload');
    writeFileSync(stale, 'partial bytes');
    const second = await startTestServer({ overrides: { server: { dataDir } } });
    try {
      assert.equal(existsSync(stale), false);
      assert.equal((await download(second.url, 'killed-upload')).res.status, 404);
    } finally {
      await second.close();
    }
  });
});

describe('file API memory (fs)', { skip: toolSkip('curl') }, () => {
  const BIG = 128 * 1024 * 1024;
  it('streams a 128 MiB upload and its download with flat memory', async () => {
    const srv = await startTestServer({});
    const dir = tempDir();
    const path = join(dir, 'big.bin');
    // Larger than the 96 MiB the test allows by a margin: a copy buffered anywhere fails it.
    await run('sh', ['-c', `head -c ${BIG} /dev/urandom > '${path}'`]);
    global.gc?.();
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    try {
      const up = await run('curl', ['-sS', '-f', '-F', `file=@${path}`, `${srv.url}/api/file/big`]);
      assert.equal(JSON.parse(up.stdout).data.file_info.size, BIG);
      const down = await run('curl', [
        '-sS',
        '-f',
        '-o',
        join(dir, 'back.bin'),
        '-w',
        '%{size_download}',
        `${srv.url}/api/file/big`,
      ]);
      assert.equal(Number(down.stdout), BIG);
      const same = await run('cmp', [path, join(dir, 'back.bin')]).then(
        () => true,
        () => false,
      );
      assert.ok(same, 'download is byte-identical');
    } finally {
      clearInterval(sampler);
      await srv.close();
    }
    // Buffering the file anywhere would add 128 MiB; streaming stays within a few buffers.
    assert.ok(peak - base < 96 * 1024 * 1024, `rss grew by ${Math.round((peak - base) / 1048576)} MiB`);
  });
});

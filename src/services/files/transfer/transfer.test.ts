// The transfer.sh way over HTTP (fetch against the real server, on local disk and on S3): PUT /<name> and multipart POST /
// under server-chosen keys, the link as the body, X-Url-Delete and its confirm page, the same
// limits as /api/file, the ShareX uploader followed as ShareX does, and a hostile-input table.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type S3Handle, startS3 } from '../../../../test/fixtures/files/s3.ts';
import { LogCapture, type Running, startTestServer } from '../../../../test/helpers/server.ts';

const LIMIT = 64 * 1024;

async function put(
  base: string,
  path: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
) {
  const payload = typeof body === 'string' ? body : new Blob([new Uint8Array(body)]);
  const res = await fetch(`${base}${path}`, { method: 'PUT', body: payload, headers });
  return { res, text: links(res, await res.text()) };
}

/** An answer's text; for a 200 (the links) without the newline that ends it, which it must have. */
function links(res: Response, text: string): string {
  if (res.status !== 200) return text;
  assert.match(text, /\n$/, 'the links end with a newline');
  return text.slice(0, -1);
}

async function post(base: string, files: [string, string | Uint8Array][], fields: [string, string][] = []) {
  const form = new FormData();
  for (const [k, v] of fields) form.append(k, v);
  for (const [name, body] of files)
    form.append('file', new Blob([typeof body === 'string' ? body : new Uint8Array(body)]), name);
  const res = await fetch(`${base}/`, { method: 'POST', body: form });
  return { res, text: links(res, await res.text()) };
}

const get = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, init);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
};

for (const backend of ['fs', 's3'] as const)
  describe(`transfer.sh-style uploads (${backend})`, { timeout: 120_000 }, () => {
    let srv: Running;
    let s3: S3Handle | undefined;
    let base: string;
    const logs = new LogCapture();
    before(async () => {
      s3 = backend === 's3' ? await startS3() : undefined;
      srv = await startTestServer({
        logs,
        overrides: {
          files: { maxBytes: LIMIT, bundleMaxFiles: 3, bundleMaxBytes: 100 * 1024 },
          ...(s3 ? { storage: s3.overrides } : {}),
        } as never,
      });
      base = srv.url;
    });
    after(async () => {
      await srv?.close();
      await s3?.close();
    });

    it('stores a PUT body under a random key and answers the link and a newline as the whole body', async () => {
      const { res, text } = await put(base, '/notes.txt', 'first line\n');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(text, new RegExp(`^${base}/api/file/[A-Za-z0-9]{12}\\.txt$`));
      assert.equal(res.headers.get('x-url-file'), text);
      const again = await put(base, '/notes.txt', 'other\n');
      assert.notEqual(again.text, text, 'the same name gets a new key');
      const dl = await get(text);
      assert.equal(dl.res.status, 200);
      assert.equal(dl.body.toString(), 'first line\n');
      assert.match(dl.res.headers.get('content-disposition') ?? '', /filename="notes\.txt"/);
    });

    it('answers a delete link that DELETE uses with its token, and only then the file is gone', async () => {
      const { res, text: link } = await put(base, '/gone.bin', 'bytes');
      const del = res.headers.get('x-url-delete') ?? '';
      const token = res.headers.get('x-owner-token') ?? '';
      assert.ok(token.length >= 32);
      const key = link.split('/').pop();
      assert.equal(del, `${base}/delete/${key}/${token}`);
      // A GET (a browser, a link preview) only asks.
      const page = await get(del);
      assert.equal(page.res.status, 200);
      assert.match(page.body.toString(), /<form method="post">/);
      assert.match(page.body.toString(), /gone\.bin/);
      assert.equal(page.res.headers.get('referrer-policy'), 'no-referrer');
      assert.equal((await get(link)).res.status, 200);
      const gone = await get(del, { method: 'DELETE' });
      assert.equal(gone.res.status, 200);
      assert.equal(gone.body.toString(), 'deleted 1 file\n');
      assert.equal((await get(link)).res.status, 404);
      assert.equal((await get(del, { method: 'DELETE' })).res.status, 404);
    });

    it('deletes through the confirm page form (POST) too', async () => {
      const { res, text: link } = await put(base, '/form.txt', 'x');
      const del = res.headers.get('x-url-delete') ?? '';
      assert.equal((await get(del, { method: 'POST' })).res.status, 200);
      assert.equal((await get(link)).res.status, 404);
    });

    it('the owner token works on /api/file too (one token system)', async () => {
      const { res, text: link } = await put(base, '/t.txt', 'x');
      const key = link.split('/').pop();
      const r = await fetch(`${base}/api/file/${key}`, {
        method: 'DELETE',
        headers: { 'x-owner-token': res.headers.get('x-owner-token') ?? '' },
      });
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { success: true, message: 'file deleted', data: { key } });
    });

    it('applies Max-Downloads and Max-Days headers', async () => {
      const { text: link } = await put(base, '/once.txt', 'once', { 'max-downloads': '1', 'max-days': '2' });
      const first = await get(link);
      assert.equal(first.res.status, 200);
      assert.equal(first.res.headers.get('x-remaining-downloads'), '0');
      assert.match(first.res.headers.get('x-remaining-days') ?? '', /^[12]\.\d{3}$/);
      assert.equal((await get(link)).res.status, 404);
    });

    it('refuses a body over the upload limit with 413, declared or streamed, and keeps nothing', async () => {
      const big = new Uint8Array(LIMIT + 1);
      const declared = await put(base, '/big.bin', big);
      assert.equal(declared.res.status, 413);
      assert.match(declared.text, /upload limit/);
      // Chunked: no Content-Length, the store's meter stops it.
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(big);
          c.close();
        },
      });
      const res = await fetch(`${base}/big.bin`, {
        method: 'PUT',
        body: stream,
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 413);
      assert.equal(res.headers.get('x-url-delete'), null);
    });

    it('stores several files of one form under one token, with a zip link last', async () => {
      const { res, text } = await post(base, [
        ['a.txt', 'alpha\n'],
        ['b.txt', 'beta\n'],
      ]);
      assert.equal(res.status, 200);
      const lines = text.split('\n');
      assert.equal(lines.length, 3);
      const zip = res.headers.get('x-url-zip');
      assert.equal(lines[2], zip);
      const keys = lines.slice(0, 2).map((l) => l.split('/').pop());
      assert.equal(zip, `${base}/zip/${keys.join(',')}`);
      assert.equal((await get(lines[0] ?? '')).body.toString(), 'alpha\n');
      assert.equal((await get(lines[1] ?? '')).body.toString(), 'beta\n');
      const z = await get(zip ?? '');
      assert.equal(z.res.status, 200);
      assert.equal(z.res.headers.get('content-type'), 'application/zip');
      assert.equal(Number(z.res.headers.get('content-length')), z.body.length);
      assert.equal(z.body.subarray(0, 4).toString('hex'), '504b0304');
      // One delete link for the whole bundle.
      const del = res.headers.get('x-url-delete') ?? '';
      assert.equal((await get(del, { method: 'DELETE' })).body.toString(), 'deleted 2 files\n');
      for (const l of lines) assert.equal((await get(l)).res.status, 404);
    });

    it('counts a zip download as a download of each file with Max-Downloads', async () => {
      const { res, text } = await post(
        base,
        [
          ['x.txt', 'x'],
          ['y.txt', 'y'],
        ],
        [['max-downloads', '1']],
      );
      assert.equal(res.status, 200);
      const lines = text.split('\n');
      const zip = lines[2] ?? '';
      assert.equal((await get(zip, { method: 'HEAD' })).res.status, 200, 'HEAD counts nothing');
      assert.equal((await get(zip)).res.status, 200);
      assert.equal((await get(zip)).res.status, 404);
      assert.equal((await get(lines[0] ?? '')).res.status, 404);
    });

    it('answers a single-file form with just its link', async () => {
      const { res, text } = await post(base, [['solo.txt', 'solo']], [['max-downloads', '3']]);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-url-zip'), null);
      const one = await get(text);
      assert.equal(one.res.headers.get('x-remaining-downloads'), '2');
    });

    it('refuses too many files (413) and leaves none of them stored', async () => {
      const before = await countStored();
      const { res, text } = await post(base, [
        ['1.txt', '1'],
        ['2.txt', '2'],
        ['3.txt', '3'],
        ['4.txt', '4'],
      ]);
      assert.equal(res.status, 413);
      assert.match(text, /too many files: at most 3/);
      assert.equal(await countStored(), before);
    });

    it('refuses a form whose files pass the total cap together (413), keeping none', async () => {
      const before = await countStored();
      const part = new Uint8Array(40 * 1024).fill(7);
      const { res, text } = await post(base, [
        ['1.bin', part],
        ['2.bin', part],
        ['3.bin', part],
      ]);
      assert.equal(res.status, 413);
      assert.match(text, /exceed 100 KiB together/);
      assert.equal(await countStored(), before);
    });

    async function countStored(): Promise<number> {
      let n = 0;
      for await (const _ of srv.app.ctx.blobs.list('files/')) n++;
      return n;
    }

    it('keeps an unknown one-segment path a 404 for other methods (the PUT route takes any name)', async () => {
      const r = await fetch(`${base}/no-such-page`);
      assert.equal(r.status, 404);
    });

    it('serves a ShareX uploader that, followed as ShareX does, uploads and deletes', async () => {
      const r = await fetch(`${base}/devutil.sxcu`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-disposition') ?? '', /filename="127\.0\.0\.1_\d+\.sxcu"/);
      const sx = (await r.json()) as Record<string, string>;
      // The fields and enum values of ShareX's custom uploader format.
      assert.deepEqual(Object.keys(sx).sort(), [
        'Body',
        'DeletionURL',
        'DestinationType',
        'ErrorMessage',
        'Name',
        'RequestMethod',
        'RequestURL',
        'URL',
        'Version',
      ]);
      assert.match(sx['Version'] ?? '', /^1[4-9]\.\d+\.\d+$/);
      for (const t of (sx['DestinationType'] ?? '').split(', '))
        assert.ok(['ImageUploader', 'TextUploader', 'FileUploader'].includes(t), t);
      assert.ok(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(sx['RequestMethod'] ?? ''));
      assert.equal(sx['Body'], 'Binary');
      assert.equal(sx['RequestURL'], `${base}/{filename}`);
      // ShareX: {filename} in the URL, the file as the body with its type, {response} and {header:..}.
      const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
      const up = await fetch((sx['RequestURL'] ?? '').replace('{filename}', 'shot_2026.png'), {
        method: sx['RequestMethod'] ?? '',
        body: png,
        headers: { 'content-type': 'image/png' },
      });
      const response = await up.text();
      const fill = (v: string | undefined) =>
        (v ?? '')
          .replace('{response}', response)
          .replace(/\{header:([^}]+)\}/, (_, h: string) => up.headers.get(h) ?? '');
      const url = fill(sx['URL']);
      const deletion = fill(sx['DeletionURL']);
      assert.equal(url, response.trim(), 'the link, without the newline a terminal wants');
      const img = await get(url);
      assert.deepEqual(img.body, png);
      assert.equal(img.res.headers.get('content-type'), 'image/png');
      assert.match(url, /\.png$/);
      assert.equal((await get(deletion)).res.status, 200, 'ShareX opens the deletion URL in a browser');
      assert.equal((await get(deletion, { method: 'POST' })).res.status, 200);
      assert.equal((await get(url)).res.status, 404);
    });

    it('draws a QR code for a link and refuses what is not one', async () => {
      const r = await fetch(`${base}/qr.svg?text=${encodeURIComponent(`${base}/api/file/x`)}`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'image/svg+xml');
      assert.match(await r.text(), /^<svg /);
      assert.equal((await fetch(`${base}/qr.svg`)).status, 400);
      const long = await fetch(`${base}/qr.svg?text=${'a'.repeat(1025)}`);
      assert.equal(long.status, 413);
      assert.match(long.headers.get('content-type') ?? '', /^text\/plain/);
    });

    describe('hostile input', () => {
      const names: [string, string, RegExp][] = [
        ['traversal', '/..%2F..%2Fetc%2Fpasswd', /filename="passwd"/],
        ['backslash traversal', '/..%5C..%5Cwin.ini', /filename="win\.ini"/],
        ['dot-only name', '/..', /filename="file"/],
        ['CRLF in the name', '/a%0D%0ASet-Cookie%3A%20x.txt', /filename="aSet-Cookie: x\.txt"/],
        ['NUL in the name', '/a%00b.txt', /filename="ab\.txt"/],
        [
          'bidi override disguising the extension',
          '/invoice%E2%80%AEfdp.exe',
          /^attachment; filename="invoicefdp\.exe"$/,
        ],
        ['hidden-file name', '/.htaccess', /filename="htaccess"/],
      ];
      for (const [what, path, disposition] of names)
        it(`stores a ${what} under a random key with a safe name`, async () => {
          const { res, text } = await put(base, path, 'x');
          assert.equal(res.status, 200, text);
          assert.match(text, new RegExp(`^${base}/api/file/[A-Za-z0-9]{12}(\\.[a-z0-9]{1,10})?$`));
          const dl = await get(text);
          assert.match(dl.res.headers.get('content-disposition') ?? '', disposition);
          assert.equal(dl.res.headers.get('set-cookie'), null);
        });

      it('refuses bad delete tokens with 403 and deletes nothing', async () => {
        const a = await put(base, '/a.txt', 'a');
        const b = await put(base, '/b.txt', 'b');
        const keyA = a.text.split('/').pop() ?? '';
        const keyB = b.text.split('/').pop() ?? '';
        const tokA = a.res.headers.get('x-owner-token') ?? '';
        const tokB = b.res.headers.get('x-owner-token') ?? '';
        const bad: [string, number][] = [
          [`/delete/${keyA}/${tokB}`, 403], // another file's token
          [`/delete/${keyA}/${tokA.slice(0, -1)}`, 403], // truncated
          [`/delete/${keyA}/${tokA}x`, 403],
          [`/delete/${keyA}/${'A'.repeat(32)}`, 403],
          [`/delete/${keyA},${keyB}/${tokA}`, 403], // one token for two owners: nothing is deleted
          [`/delete/${keyA}/`, 403], // no token
          [`/delete/..%2F${keyA}/${tokA}`, 400],
          [`/delete/${keyA},,/${tokA}`, 400],
          [`/delete/${Array.from({ length: 4 }, (_, i) => `k${i}`).join(',')}/${tokA}`, 400],
          [`/delete/nosuchkey/${tokA}`, 404],
        ];
        for (const [path, status] of bad) {
          const r = await fetch(`${base}${path}`, { method: 'DELETE' });
          assert.equal(r.status, status, path);
          assert.match(r.headers.get('content-type') ?? '', /^text\/plain/, path);
        }
        assert.equal((await get(a.text)).res.status, 200);
        assert.equal((await get(b.text)).res.status, 200);
      });

      it('refuses bad zip key lists', async () => {
        const cases: [string, number][] = [
          ['/zip/..,a', 400],
          ['/zip/.hidden', 400],
          ['/zip/a,..%2Fb', 400],
          ['/zip/a,b,c,d', 400],
          ['/zip/doesnotexist1,doesnotexist2', 404],
        ];
        for (const [path, status] of cases)
          assert.equal((await fetch(`${base}${path}`)).status, status, path);
      });

      it('refuses PUT with a bad Max-Downloads (400, in text) before reading the body', async () => {
        const { res, text } = await put(base, '/x.txt', 'x', { 'max-downloads': '-1' });
        assert.equal(res.status, 400);
        assert.match(text, /^Max-Downloads must be/);
      });

      it('refuses a POST / that is not multipart and a form without files', async () => {
        const r = await fetch(`${base}/`, {
          method: 'POST',
          body: 'x',
          headers: { 'content-type': 'text/plain' },
        });
        assert.equal(r.status, 400);
        const none = await post(base, [], [['note', 'x']]);
        assert.equal(none.res.status, 400);
        assert.match(none.text, /no file part/);
      });
    });

    it('never logs an owner token or a delete link whole', async () => {
      const { res } = await put(base, '/secret.txt', 'x');
      const del = res.headers.get('x-url-delete') ?? '';
      await fetch(del);
      await fetch(del, { method: 'DELETE' });
      const token = res.headers.get('x-owner-token') ?? '';
      assert.ok(token);
      assert.ok(logs.text().includes('/delete/'), 'the delete requests were logged');
      assert.equal(logs.text().includes(token), false);
    });
  });

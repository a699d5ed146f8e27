// File lifetimes through the real composition: Max-Downloads / Max-Days headers and form fields, the
// download rule (HEAD, Range continuations, the resume grace), deletion, the sweeper, hostile values.
// A test clock (ctx.now) stands in for days passing.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildTestServer, diskBlobs, tempDir } from '../../../test/helpers/server.ts';
import { MemoryState } from '../../infra/state/memory.ts';
import { DownloadCounter } from './download-counter.ts';
import { DownloadLimits } from './downloads.ts';
import { DAY_MS } from './lifetime.ts';
import { FileStore } from './store.ts';

const BODY = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'.repeat(3));
let clock = Date.UTC(2026, 10, 1);

function multipart(o: { file?: Buffer; before?: [string, string][]; after?: [string, string][] }) {
  const b = 'xLIFEx';
  const field = ([n, v]: [string, string]) =>
    `--${b}\r\nContent-Disposition: form-data; name="${n}"\r\n\r\n${v}\r\n`;
  const parts = [
    ...(o.before ?? []).map(field),
    `--${b}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\n`,
  ];
  return {
    payload: Buffer.concat([
      Buffer.from(parts.join('')),
      o.file ?? BODY,
      Buffer.from(`\r\n${(o.after ?? []).map(field).join('')}--${b}--\r\n`),
    ]),
    headers: { 'content-type': `multipart/form-data; boundary=${b}` },
  };
}

describe('file lifetimes', () => {
  let app: FastifyInstance;
  let dataDir: string;
  before(async () => {
    dataDir = tempDir();
    app = await buildTestServer({
      overrides: {
        server: { dataDir },
        files: { resumeGraceSec: 600, maxDownloadsLimit: 50, maxDaysLimit: 30 },
      },
      now: () => clock,
    });
  });
  after(() => app.close());

  let n = 0;
  const post = async (
    headers: Record<string, string | string[]> = {},
    form: Parameters<typeof multipart>[0] = {},
    key = `life-${++n}`,
  ) => {
    const m = multipart(form);
    const res = await app.inject({
      method: 'POST',
      url: `/api/file/${key}`,
      payload: m.payload,
      headers: { ...m.headers, ...headers },
    });
    return { key, res, json: res.json() };
  };
  const get = (key: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') =>
    app.inject({ method, url: `/api/file/${key}`, headers });
  const stored = () => readdirSync(join(dataDir, 'blobs', 'files'));
  /** The used-up file is deleted once its response finished, just after inject() resolves. */
  const deleted = async (key: string) => {
    for (let i = 0; i < 100 && stored().includes(key); i++) await new Promise((r) => setTimeout(r, 20));
    return !stored().includes(key);
  };

  it('reports the limits beside the unchanged 2.1 result', async () => {
    const { key, res, json } = await post({ 'max-downloads': '3', 'max-days': '2' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(Object.keys(json), ['success', 'message', 'data']);
    assert.deepEqual(Object.keys(json.data), ['key', 'file_info', 'lifetime']);
    assert.deepEqual(Object.keys(json.data.file_info), [
      'filename',
      'mimetype',
      'size',
      'original_size',
      'compressed',
      'compressed_size',
      'compression_ratio',
    ]);
    assert.deepEqual(json.data.lifetime, {
      max_downloads: 3,
      max_days: 2,
      expires_at: new Date(clock + 2 * DAY_MS).toISOString(),
    });
    assert.equal(json.data.key, key);
    const plain = await post();
    assert.deepEqual(Object.keys(plain.json.data), ['key', 'file_info']);
  });

  it('serves a Max-Downloads: 1 file once, then answers 404 in the file envelope and deletes it', async () => {
    const { key } = await post({ 'Max-Downloads': '1' });
    assert.ok(stored().includes(key));
    const first = await get(key);
    assert.equal(first.statusCode, 200);
    assert.deepEqual(first.rawPayload, BODY);
    assert.equal(first.headers['x-remaining-downloads'], '0');
    const second = await get(key);
    assert.equal(second.statusCode, 404);
    assert.deepEqual(second.json(), { success: false, message: 'no file with this key' });
    assert.equal(await deleted(key), true);
  });

  it('does not count HEAD, 304 or 416; counts each GET that sends the body', async () => {
    const { key } = await post({ 'Max-Downloads': '2' });
    assert.equal((await get(key, {}, 'HEAD')).headers['x-remaining-downloads'], '2');
    const one = await get(key);
    assert.equal(one.headers['x-remaining-downloads'], '1');
    const etag = String(one.headers['etag']);
    assert.equal((await get(key, { 'if-none-match': etag })).statusCode, 304);
    assert.equal((await get(key, { range: 'bytes=5000-' })).statusCode, 416);
    assert.equal((await get(key, {}, 'HEAD')).statusCode, 200);
    assert.equal((await get(key)).statusCode, 200);
    assert.equal((await get(key, {}, 'HEAD')).statusCode, 404);
    assert.equal((await get(key)).statusCode, 404);
  });

  it('lets a Range continuation finish the last download without taking another count', async () => {
    const { key } = await post({ 'Max-Downloads': '1' });
    const head = await get(key, { range: 'bytes=0-9' });
    assert.equal(head.statusCode, 206);
    // The first download is not complete: no new download remains for anyone else, but the file
    // is still there for the client that started it.
    assert.equal((await get(key, {}, 'HEAD')).statusCode, 200);
    const other = await app.inject({ method: 'HEAD', url: `/api/file/${key}`, remoteAddress: '192.0.2.9' });
    assert.equal(other.statusCode, 404);
    const rest = await get(key, { range: 'bytes=10-' });
    assert.equal(rest.statusCode, 206);
    assert.deepEqual(Buffer.concat([head.rawPayload, rest.rawPayload]), BODY);
    // Its final byte was sent: the file is gone.
    assert.equal(await deleted(key), true);
    assert.equal((await get(key, { range: 'bytes=10-' })).statusCode, 404);
  });

  it('counts a first request with a Range past byte 0, and ends continuations after the grace', async () => {
    const { key } = await post({ 'Max-Downloads': '1' });
    assert.equal((await get(key, { range: 'bytes=1-4' })).headers['x-remaining-downloads'], '0');
    assert.equal((await get(key, { range: 'bytes=5-9' })).statusCode, 206);
    clock += 601_000;
    assert.equal((await get(key, { range: 'bytes=10-' })).statusCode, 404);
    assert.equal(stored().includes(key), false);
  });

  it('expires a Max-Days file when the days have passed', async () => {
    const { key } = await post({ 'Max-Days': '1.5' });
    const ok = await get(key);
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['x-remaining-days'], '1.500');
    clock += 1.5 * DAY_MS - 1000;
    assert.equal((await get(key, {}, 'HEAD')).statusCode, 200);
    clock += 1000;
    const gone = await get(key);
    assert.equal(gone.statusCode, 404);
    assert.deepEqual(gone.json(), { success: false, message: 'no file with this key' });
    assert.equal(stored().includes(key), false);
  });

  it('takes the limits from form fields, before or after the file part', async () => {
    const a = await post({}, { before: [['max_downloads', '1']], after: [['Max-Days', '3']] });
    assert.equal(a.res.statusCode, 200, a.res.body);
    assert.deepEqual(a.json.data.lifetime, {
      max_downloads: 1,
      max_days: 3,
      expires_at: new Date(clock + 3 * DAY_MS).toISOString(),
    });
    const g1 = await get(a.key);
    assert.equal(g1.statusCode, 200);
    const g2 = await get(a.key);
    assert.equal(g2.statusCode, 404, JSON.stringify([g1.headers, g2.headers]));
    // The same value twice is fine; an unrelated field is ignored.
    const b = await post(
      { 'max-downloads': '2' },
      { before: [['note', '7']], after: [['max-downloads', '2']] },
    );
    assert.equal(b.res.statusCode, 200, b.res.body);
    assert.equal(b.json.data.lifetime.max_downloads, 2);
  });

  it('starts a fresh count when the owner replaces the file', async () => {
    const first = await post({ 'Max-Downloads': '2' });
    assert.equal((await get(first.key)).statusCode, 200);
    const token = String(first.res.headers['x-owner-token']);
    const again = await post({ 'Max-Downloads': '2', 'x-owner-token': token }, {}, first.key);
    assert.equal(again.res.statusCode, 200);
    assert.equal((await get(first.key)).headers['x-remaining-downloads'], '1');
    assert.equal((await get(first.key)).statusCode, 200);
    assert.equal((await get(first.key)).statusCode, 404);
  });

  it('refuses hostile values with 400 in the file envelope and stores nothing', async () => {
    const before = stored().length;
    const table: [Record<string, string | string[]>, Parameters<typeof multipart>[0]][] = [
      [{ 'max-downloads': '0' }, {}],
      [{ 'max-downloads': '-1' }, {}],
      [{ 'max-downloads': '51' }, {}],
      [{ 'max-downloads': '99999999999999999999' }, {}],
      [{ 'max-downloads': '1.5' }, {}],
      [{ 'max-downloads': '1e3' }, {}],
      [{ 'max-downloads': '0x10' }, {}],
      [{ 'max-downloads': 'abc' }, {}],
      [{ 'max-downloads': '' }, {}],
      [{ 'max-downloads': '１' }, {}],
      [{ 'max-downloads': 'Infinity' }, {}],
      [{ 'max-downloads': '__proto__' }, {}],
      [{ 'max-downloads': 'constructor' }, {}],
      [{ 'max-downloads': ['1', '2'] }, {}],
      [{ 'max-days': '0' }, {}],
      [{ 'max-days': '-2' }, {}],
      [{ 'max-days': '31' }, {}],
      [{ 'max-days': 'NaN' }, {}],
      [{ 'max-days': '1.0000001' }, {}],
      [{ 'max-days': 'toString' }, {}],
      [{}, { before: [['max_downloads', 'hasOwnProperty']] }],
      [{}, { after: [['max_days', '-1']] }],
      [
        {},
        {
          before: [
            ['max_days', '1'],
            ['max_days', '2'],
          ],
        },
      ],
      [{ 'max-downloads': '1' }, { before: [['max-downloads', '2']] }],
      // @fastify/multipart itself refuses fields named after Object.prototype members.
      [{}, { before: [['__proto__', '1']] }],
      [{}, { after: [['constructor', '1']] }],
    ];
    for (const [headers, form] of table) {
      const { res, json } = await post(headers, form);
      assert.equal(res.statusCode, 400, `${JSON.stringify([headers, form])}: ${res.body}`);
      assert.equal(json.success, false);
      assert.match(json.message, /Max-(Downloads|Days)|max-(downloads|days)|prototype/);
    }
    assert.equal(stored().length, before);
  });
});

describe('the lifetime sweeper', () => {
  it('deletes files past Max-Days and used-up files after the grace, and keeps the rest', async () => {
    const blobs = await diskBlobs();
    const opts = { maxBytes: 1 << 20, quotaBytes: 0, codec: 'none' as const, level: 1, minSavingPercent: 10 };
    let now = Date.UTC(2026, 0, 1);
    const files = new FileStore(blobs, { ...opts, maxAgeSec: 0, minAgeSec: 0 }, pino({ level: 'silent' }), {
      now: () => now,
      downloads: new DownloadCounter(new MemoryState(), 60_000),
    });
    const limits = new DownloadLimits(files, files.downloads, 60_000);
    const up = (key: string, maxDownloads?: number, maxDays?: number) =>
      files.upload({
        key,
        file: Readable.from([BODY]),
        filename: `${key}.txt`,
        declaredType: 'text/plain',
        token: undefined,
        limits: () => ({
          ...(maxDownloads ? { maxDownloads } : {}),
          ...(maxDays ? { maxDays } : {}),
        }),
      });
    await up('days', undefined, 1);
    await up('used', 1);
    await up('unused', 1);
    await up('plain');
    const used = await files.find('used');
    assert.ok(used);
    await limits.admit(used, 'new', '192.0.2.1');
    assert.equal(await limits.sweep(), 0);
    now += DAY_MS;
    assert.equal(await limits.sweep(), 2);
    assert.equal(await files.find('days'), null);
    assert.equal(await files.find('used'), null);
    assert.ok(await files.find('unused'));
    assert.ok(await files.find('plain'));
    // A counter that cannot be reached refuses the download (503), it never serves it uncounted.
    const unused = await files.find('unused');
    assert.ok(unused);
    const away = new Proxy(new MemoryState(), {
      get: (t, p) =>
        typeof p === 'string' && p !== 'kind'
          ? () => Promise.reject(new Error('ECONNREFUSED'))
          : Reflect.get(t, p),
    });
    const down = new DownloadLimits(files, new DownloadCounter(away, 60_000), 60_000);
    await assert.rejects(down.admit(unused, 'new', '192.0.2.1'), { status: 503 });
    // The markers of deleted files went with them: only "unused" is still swept.
    const markers = [];
    for await (const e of blobs.list('file-limits/')) markers.push(e.key);
    assert.deepEqual(markers, ['file-limits/unused']);
  });
});

describe('a used-up file version', () => {
  it('serves no request that found the file before its last download deleted it', async () => {
    const blobs = await diskBlobs();
    const opts = { maxBytes: 1 << 20, quotaBytes: 0, codec: 'none' as const, level: 1, minSavingPercent: 10 };
    const files = new FileStore(blobs, { ...opts, maxAgeSec: 0, minAgeSec: 0 }, pino({ level: 'silent' }), {
      downloads: new DownloadCounter(new MemoryState(), 60_000),
    });
    const limits = new DownloadLimits(files, files.downloads, 60_000);
    await files.upload({
      key: 'twice',
      file: Readable.from([BODY]),
      filename: 'twice.txt',
      declaredType: 'text/plain',
      token: undefined,
      limits: () => ({ maxDownloads: 2 }),
    });
    const f = await files.find('twice');
    assert.ok(f);
    // Two downloads take the two counts and send their final bytes: the second one deletes the file.
    for (const client of ['192.0.2.1', '192.0.2.2']) {
      assert.equal((await limits.admit(f, 'new', client)).tracked, true);
      await limits.finish(f);
    }
    assert.equal(await files.find('twice'), null);
    // A request that found the version before the delete asks now (on S3 its open bytes still
    // read): the count stays closed, so neither a new download nor a look is let through.
    await assert.rejects(limits.admit(f, 'new', '192.0.2.3'), { status: 404 });
    await assert.rejects(limits.admit(f, 'peek', '192.0.2.4'), { status: 404 });
    // The first client's continuation within the grace is still its own download.
    assert.deepEqual(await limits.admit(f, 'continue', '192.0.2.1'), { remaining: 0, tracked: true });
  });
});

describe('lifetimes and download offload', () => {
  it('sends a Max-Downloads file itself even when downloads go to nginx (X-Accel-Redirect)', async () => {
    const app = await buildTestServer({
      overrides: { files: { accelRedirect: '/_devutil_files/', codec: 'none' } },
    });
    try {
      const up = async (key: string, headers: Record<string, string>) => {
        const m = multipart({});
        const res = await app.inject({
          method: 'POST',
          url: `/api/file/${key}`,
          payload: m.payload,
          headers: { ...m.headers, ...headers },
        });
        assert.equal(res.statusCode, 200, res.body);
      };
      await up('offloaded', {});
      await up('counted', { 'max-downloads': '1' });
      const plain = await app.inject({ url: '/api/file/offloaded' });
      assert.match(String(plain.headers['x-accel-redirect']), /^\/_devutil_files\//);
      // nginx would send it again and again without asking: this one is served and counted here.
      const first = await app.inject({ url: '/api/file/counted' });
      assert.equal(first.headers['x-accel-redirect'], undefined);
      assert.deepEqual(first.rawPayload, BODY);
      assert.equal((await app.inject({ url: '/api/file/counted' })).statusCode, 404);
    } finally {
      await app.close();
    }
  });
});

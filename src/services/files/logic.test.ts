// Framework-free parts of the file store: keys, names, headers, sniffing,
// retention and the sweeper, with hostile-input tables.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { diskBlobs } from '../../../test/helpers/server.ts';
import { contentDisposition, ratio, sanitizeFilename, validKey } from './names.ts';
import { alreadyCompressed, sniff, usableDeclaredType } from './sniff.ts';
import { FileStore } from './store.ts';

describe('keys', () => {
  it('accepts exactly 1-128 of A-Z a-z 0-9 . _ - not starting with a dot', () => {
    for (const k of ['a', 'A.b_c-1', 'x'.repeat(128), '-', '_x', 'a..b', 'report.tar.gz'])
      assert.ok(validKey(k), k);
    const hostile = [
      '',
      '.',
      '..',
      '.env',
      'x'.repeat(129),
      'a/b',
      'a\\b',
      'a b',
      'ä',
      'a\u0000',
      'a\r\nb',
      'a%2F',
      '😀',
      'a:b',
      'CON?',
    ];
    for (const k of hostile) assert.equal(validKey(k), false, JSON.stringify(k));
  });
});

describe('file names', () => {
  it('drops paths and control characters but keeps Unicode', () => {
    const table: [string | undefined, string][] = [
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\me\\notes.txt', 'notes.txt'],
      ['résumé ✓.pdf', 'résumé ✓.pdf'],
      ['evil\r\nSet-Cookie: x=1.txt', 'evilSet-Cookie: x=1.txt'],
      ['invoice\u202Etxt.exe', 'invoicetxt.exe'],
      ['..', 'fallback'],
      ['', 'fallback'],
      [undefined, 'fallback'],
      ['...hidden', 'hidden'],
      ['tab\there', 'tabhere'],
    ];
    for (const [raw, want] of table) assert.equal(sanitizeFilename(raw, 'fallback'), want, String(raw));
    const long = sanitizeFilename(`${'ü'.repeat(300)}.txt`, 'f');
    assert.ok(Buffer.byteLength(long) <= 200);
    assert.ok(long.endsWith('.txt'));
  });

  it('builds an RFC 6266 attachment header that survives quotes and non-ASCII', () => {
    assert.equal(contentDisposition('a.txt'), 'attachment; filename="a.txt"');
    assert.equal(contentDisposition('say "hi".txt'), 'attachment; filename="say _hi_.txt"');
    const h = contentDisposition('naïve (1).txt');
    assert.match(h, /filename\*=UTF-8''na%C3%AFve%20%281%29\.txt$/);
    // The fallback holds the UTF-8 bytes as latin1 code units (what Node puts on the wire).
    assert.ok(h.includes(Buffer.from('naïve', 'utf8').toString('latin1')));
    assert.ok(!/[\r\n]/.test(contentDisposition('x\r\ny')));
  });

  it('formats the saving with two decimals and a percent sign', () => {
    assert.equal(ratio(10000, 2877), '71.23%');
    assert.equal(ratio(0, 0), '0.00%');
    assert.equal(ratio(100, 100), '0.00%');
    assert.equal(ratio(100, 120), '0.00%');
    assert.equal(ratio(3, 1), '66.67%');
  });
});

describe('media types', () => {
  it('sniffs magic numbers, then extensions, then text', () => {
    assert.equal(sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0]), 'x'), 'image/jpeg');
    assert.equal(sniff(Buffer.from('%PDF-1.7'), 'x'), 'application/pdf');
    assert.equal(sniff(Buffer.from('RIFF\0\0\0\0WEBPVP8 '), 'x'), 'image/webp');
    assert.equal(sniff(Buffer.from('{"a":1}'), 'a.json'), 'application/json; charset=utf-8');
    assert.equal(sniff(Buffer.from('héllo'), 'readme'), 'text/plain; charset=utf-8');
    assert.equal(sniff(Buffer.from([0, 1, 2, 3, 250]), 'blob'), 'application/octet-stream');
  });

  it('falls back to sniffing for missing, generic or malformed declared types', () => {
    assert.equal(usableDeclaredType('text/csv'), 'text/csv');
    assert.equal(usableDeclaredType('text/plain; charset=utf-8'), 'text/plain; charset=utf-8');
    for (const t of [
      undefined,
      '',
      'application/octet-stream',
      'text/html\r\nX-Evil: 1',
      'nonsense',
      'a/b; x="\r"',
    ])
      assert.equal(usableDeclaredType(t), null, String(t));
  });

  it('knows already-compressed types', () => {
    for (const t of [
      'image/jpeg',
      'image/png',
      'video/mp4',
      'application/zip',
      'application/gzip',
      'audio/mpeg',
    ])
      assert.ok(alreadyCompressed(t), t);
    for (const t of ['text/plain', 'image/svg+xml', 'application/json', 'image/bmp', 'audio/wav'])
      assert.equal(alreadyCompressed(t), false, t);
  });
});

describe('retention', () => {
  const opts = { maxBytes: 1000, quotaBytes: 0, codec: 'br' as const, level: 4, minSavingPercent: 10 };

  it('keeps files forever by default and applies the 0x0.st size rule when configured', async () => {
    const blobs = await diskBlobs();
    const log = pino({ level: 'silent' });
    const forever = new FileStore(blobs, { ...opts, maxAgeSec: 0, minAgeSec: 0 }, log);
    assert.equal(forever.retentionSec(500), 0);
    assert.equal(forever.expired(500, new Date(0)), false);
    const rule = new FileStore(blobs, { ...opts, maxAgeSec: 365 * 86400, minAgeSec: 30 * 86400 }, log);
    assert.equal(rule.retentionSec(0), 365 * 86400);
    assert.equal(rule.retentionSec(1000), 30 * 86400);
    const mid = rule.retentionSec(500);
    assert.ok(mid > 30 * 86400 && mid < 365 * 86400);

    const store = new FileStore(blobs, { ...opts, maxAgeSec: 60, minAgeSec: 0 }, log);
    const up = await store.upload({
      key: 'old',
      file: Readable.from([Buffer.from('bytes')]),
      filename: 'a',
      declaredType: 'text/plain',
      token: undefined,
    });
    assert.ok(up.ownerToken);
    assert.ok(await store.find('old'));
    assert.equal(await store.sweep(Date.now() + 30_000), 0);
    assert.ok(await store.find('old'));
    assert.equal(await store.sweep(Date.now() + 61_000), 1);
    assert.equal(await store.find('old'), null);
    await blobs.close();
  });
});

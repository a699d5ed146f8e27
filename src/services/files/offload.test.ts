import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asciiDisposition, offloadOf } from './offload.ts';
import type { StoredFile } from './store.ts';

const file = (o: Partial<StoredFile> = {}): StoredFile => ({
  key: 'k',
  filename: 'k.txt',
  mimetype: 'text/plain',
  size: 100,
  stored: 40,
  encoding: 'identity',
  sha256: 'a'.repeat(64),
  lastModified: new Date(0),
  bodyFile: 'ab/abcd',
  ownerHash: '',
  ...o,
});
const get = (headers: Record<string, string> = {}) => ({ method: 'GET', headers });
const accel = { accelPrefix: '/_f/', presign: false };
const presign = { accelPrefix: '', presign: true };

describe('offloadOf', () => {
  it('hands plain stored bytes to nginx, whole or by range', () => {
    assert.deepEqual(offloadOf(file(), get(), accel), {
      kind: 'accel',
      location: '/_f/ab/abcd',
      encoded: false,
    });
    assert.equal(offloadOf(file(), get({ range: 'bytes=0-9' }), accel)?.kind, 'accel');
    assert.equal(offloadOf(file(), get({ range: 'bytes=0-9' }), presign)?.kind, 'presign');
  });

  it('hands stored brotli over only to a client that takes br and asks for no range', () => {
    const br = file({ encoding: 'br' });
    assert.deepEqual(offloadOf(br, get({ 'accept-encoding': 'gzip, br' }), accel), {
      kind: 'accel',
      location: '/_f/ab/abcd',
      encoded: true,
    });
    assert.equal(offloadOf(br, get({ 'accept-encoding': 'gzip' }), accel), null);
    assert.equal(offloadOf(br, get({ 'accept-encoding': 'br;q=0' }), accel), null);
    assert.equal(offloadOf(br, get(), presign), null);
    assert.equal(offloadOf(br, get({ 'accept-encoding': 'br', range: 'bytes=5-' }), accel), null);
    assert.equal(offloadOf(br, get({ 'accept-encoding': 'br' }), presign)?.kind, 'presign');
  });

  it('keeps HEAD, empty files, blobs without a body file and If-Range on S3 at home', () => {
    assert.equal(offloadOf(file(), { method: 'HEAD', headers: {} }, accel), null);
    assert.equal(offloadOf(file({ size: 0, stored: 0 }), get(), accel), null);
    const { bodyFile: _, ...legacy } = file();
    assert.equal(offloadOf(legacy, get(), accel), null);
    assert.equal(offloadOf(file(), get({ 'if-range': '"x"', range: 'bytes=0-1' }), presign), null);
    assert.equal(offloadOf(file(), get(), { accelPrefix: '', presign: false }), null);
  });
});

describe('asciiDisposition', () => {
  it('keeps ASCII names and puts others in filename* (S3 headers are ASCII)', () => {
    assert.equal(asciiDisposition('a b.txt'), 'attachment; filename="a b.txt"');
    assert.equal(
      asciiDisposition('résumé "1".txt'),
      `attachment; filename="r_sum_ _1_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%221%22.txt`,
    );
  });
});

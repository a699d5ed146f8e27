import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { fileHash, getChunks, hashToHex, xorbHash } from '@huggingface/xetchunk-wasm';
import { XetFileHash, XetTree } from './xet-hash.ts';

const chunk = () => ({
  hash: new Uint8Array(randomBytes(32)),
  length: 1 + Math.floor(Math.random() * 65_536),
});

describe('Xet file hash', { timeout: 60_000 }, () => {
  it('builds the same tree as the reference aggregation, node by node, for every count up to 300 and a long run', () => {
    for (const n of [...Array.from({ length: 301 }, (_, i) => i), 5000]) {
      const chunks = Array.from({ length: n }, chunk);
      const tree = new XetTree();
      for (const c of chunks) tree.add(c);
      assert.equal(hashToHex(tree.root()), hashToHex(xorbHash(chunks)), `${n} chunks`);
    }
  });

  it('hashes a body fed in pieces of any size as the reference hashes it whole', () => {
    for (const size of [0, 1, 8191, 65_536, 300_000, 2 * 1024 * 1024 + 17]) {
      const body = randomBytes(size);
      const h = new XetFileHash();
      for (let at = 0; at < size; ) {
        const n = 1 + Math.floor(Math.random() * 200_000);
        h.update(body.subarray(at, at + n));
        at += n;
      }
      assert.equal(h.hex(), hashToHex(fileHash(getChunks(body))), `${size} bytes`);
    }
  });

  it('tells a body from the same body with one byte changed', () => {
    const body = randomBytes(500_000);
    const a = new XetFileHash();
    a.update(body);
    body[123_456] = (body[123_456] ?? 0) ^ 1;
    const b = new XetFileHash();
    b.update(body);
    assert.notEqual(a.hex(), b.hex());
  });
});

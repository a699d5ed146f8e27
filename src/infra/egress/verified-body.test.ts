import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { type BodyHash, verifiedBody } from './verified-body.ts';

function sha256(hex: string): BodyHash {
  const h = createHash('sha256');
  return { update: (c) => h.update(c), matches: () => h.digest('hex') === hex };
}

/** Everything the reader got, and the error the stream ended with (if any). */
async function drain(r: Readable): Promise<{ got: Buffer; err: unknown }> {
  const parts: Buffer[] = [];
  try {
    for await (const c of r) parts.push(c as Buffer);
    return { got: Buffer.concat(parts), err: null };
  } catch (err) {
    return { got: Buffer.concat(parts), err };
  }
}

const pieces = (b: Buffer, n: number) =>
  Readable.from(Array.from({ length: Math.ceil(b.length / n) }, (_, i) => b.subarray(i * n, (i + 1) * n)));

describe('verified body', { timeout: 10_000 }, () => {
  it('passes a matching body whole, in any pieces', async () => {
    const body = randomBytes(100_000);
    const hex = createHash('sha256').update(body).digest('hex');
    for (const n of [1, 7, 4096, 100_000]) {
      const r = await drain(verifiedBody(pieces(body, n), sha256(hex), () => new Error('mismatch')));
      assert.equal(r.err, null);
      assert.ok(r.got.equals(body), `pieces of ${n}`);
    }
  });

  it('ends a body that does not match with the error, never passing it whole', async () => {
    const body = randomBytes(100_000);
    const hex = createHash('sha256').update(body).digest('hex');
    const bad = Buffer.from(body);
    bad[50_000] = (bad[50_000] ?? 0) ^ 1;
    for (const n of [1, 4096, 100_000]) {
      const r = await drain(verifiedBody(pieces(bad, n), sha256(hex), () => new Error('mismatch')));
      assert.match(String(r.err), /mismatch/);
      assert.ok(r.got.length < body.length, `pieces of ${n}: never the whole body`);
    }
  });

  it('passes the source failure on', async () => {
    const src = new Readable({ read() {} });
    const out = verifiedBody(src, sha256('0'.repeat(64)), () => new Error('mismatch'));
    src.push(Buffer.from('abc'));
    src.destroy(new Error('upstream cut'));
    assert.match(String((await drain(out)).err), /upstream cut/);
  });
});

// Parallel uploads against the files quota, for the quota tests on one instance, on cluster workers
// and on two instances (test/e2e/files-quota.test.ts, test/e2e/fleet.test.ts): with a declared
// Content-Length (refused before the body is read) or chunked (reserved as bytes arrive).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { humanBytes } from '../../src/infra/config/bytes.ts';

export interface Result {
  key: string;
  status: number;
  body: string;
  token: string;
}

/** A multipart upload with Content-Length (fetch computes it for a FormData of Blobs). */
export async function declared(base: string, key: string, size: number): Promise<Result> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(randomBytes(size))]), 'data.bin');
  const res = await fetch(`${base}/api/file/${key}`, { method: 'POST', body: form });
  return { key, status: res.status, body: await res.text(), token: res.headers.get('x-owner-token') ?? '' };
}

/** A multipart upload sent chunked in 32 KiB pieces, so the server never knows its length up front. */
export function chunked(base: string, key: string, size: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const boundary = 'quotaBOUNDARY';
    const req = request(`${base}/api/file/${key}`, {
      method: 'POST',
      agent: false,
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () =>
        resolve({
          key,
          status: res.statusCode ?? 0,
          body,
          token: String(res.headers['x-owner-token'] ?? ''),
        }),
      );
    });
    // An early refusal may reset the rest of the upload: only a missing answer is a failure.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="data.bin"\r\n\r\n`);
    const data = randomBytes(size);
    let off = 0;
    const pump = () => {
      while (off < size && !answered) {
        const piece = data.subarray(off, off + 32 * 1024);
        off += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!answered) req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

/** What each key holds now (0 = nothing), read through `base`. */
export async function storedSizes(base: string, keys: string[]): Promise<number[]> {
  return Promise.all(
    keys.map(async (k) => {
      const r = await fetch(`${base}/api/file/${k}`, { method: 'HEAD' });
      return r.status === 200 ? Number(r.headers.get('content-length')) : 0;
    }),
  );
}

export async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * Runs `n` uploads at once, spread over the addresses; checks that no more than `quota` was stored
 * and exactly the accepted uploads were; deletes what was stored.
 */
export async function race(
  quota: number,
  bases: string[],
  n: number,
  size: number,
  send: (base: string, key: string, size: number) => Promise<Result>,
): Promise<Result[]> {
  const tag = randomBytes(3).toString('hex');
  const keys = Array.from({ length: n }, (_, i) => `q-${tag}-${i}`);
  const results = await Promise.all(keys.map((k, i) => send(bases[i % bases.length] ?? '', k, size)));
  for (const r of results) {
    assert.ok(r.status === 200 || r.status === 507, `${r.key}: ${r.status} ${r.body}`);
    if (r.status === 507)
      assert.deepEqual(JSON.parse(r.body), {
        success: false,
        message: `storage quota of ${humanBytes(quota)} is full`,
      });
  }
  const sizes = await storedSizes(bases[0] ?? '', keys);
  const total = sizes.reduce((a, b) => a + b, 0);
  assert.ok(total <= quota, `stored ${total} bytes under a quota of ${quota}`);
  assert.deepEqual(
    sizes.map((s) => s > 0),
    results.map((r) => r.status === 200),
    'exactly the accepted uploads are stored',
  );
  for (const b of bases)
    assert.equal(await metric(b, 'devutil_files_reserved_bytes'), 0, 'no space left reserved');
  for (const r of results) {
    if (r.status !== 200) continue;
    const del = await fetch(`${bases[0]}/api/file/${r.key}`, {
      method: 'DELETE',
      headers: { 'x-owner-token': r.token },
    });
    assert.equal(del.status, 200);
  }
  return results;
}

/** How many of the uploads were accepted. */
export const accepted = (rs: Result[]): number => rs.filter((r) => r.status === 200).length;

// kill -9 during uploads, in a loop: start, upload, kill at a random point, restart on the same
// data directory. No partial or corrupt file is ever served, every completed upload stays intact,
// and the temporary files of the dead process are cleaned at start-up.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';

const ROUNDS = Number(process.env['DEVUTIL_FAULT_ROUNDS'] ?? 6);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Streams a multipart upload in chunks; `onProgress(sent)` runs after every chunk. */
function streamUpload(
  port: number,
  key: string,
  data: Buffer,
  onProgress: (sent: number) => void,
): Promise<number> {
  const boundary = `----devutil${randomBytes(6).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = Buffer.concat([head, data, tail]);
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/api/file/${key}`,
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': body.length,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(-1));
      },
    );
    req.on('error', () => resolve(-1));
    let sent = 0;
    const chunk = 256 * 1024;
    const pump = () => {
      if (sent >= body.length) return req.end();
      const part = body.subarray(sent, sent + chunk);
      sent += part.length;
      const ok = req.write(part);
      onProgress(sent);
      if (ok) setImmediate(pump);
      else req.once('drain', pump);
    };
    pump();
  });
}

async function fetchBytes(url: string): Promise<{ status: number; body: Buffer }> {
  const r = await fetch(url);
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

describe('kill -9 during uploads', () => {
  it(`never serves a partial file and keeps every completed upload (${ROUNDS} rounds)`, async () => {
    const dataDir = tempDir('devutil-fault-');
    const port = await freePort();
    const env = { DEVUTIL_DATA_DIR: dataDir, DEVUTIL_PORT: String(port), DEVUTIL_FILES_RATE_LIMIT: 'off' };
    const completed = new Map<string, string>();
    const interrupted: { key: string; hash: string }[] = [];
    let proc: DevutilProcess | undefined;
    let leftBehind = 0;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        proc = await startDevutilProcess(env);
        // The dead process's temporary files are gone once the new one is up.
        const tmp = join(dataDir, 'blobs', '.tmp');
        assert.deepEqual(readdirSync(tmp), [], `round ${round}: temporary files left after restart`);
        for (const [key, hash] of completed) {
          const got = await fetchBytes(`${proc.url}/api/file/${key}`);
          assert.equal(got.status, 200, `completed upload ${key} lost`);
          assert.equal(sha(got.body), hash, `completed upload ${key} corrupted`);
        }
        for (const { key, hash } of interrupted) {
          const got = await fetchBytes(`${proc.url}/api/file/${key}`);
          assert.ok(
            got.status === 404 || (got.status === 200 && sha(got.body) === hash),
            `${key}: partial file served (${got.status})`,
          );
        }

        // One upload that completes, then one killed at a random point (possibly after its last byte).
        const done = randomBytes(300_000 + Math.floor(Math.random() * 300_000));
        const doneKey = `done-${round}`;
        assert.equal(await streamUpload(port, doneKey, done, () => {}), 200);
        completed.set(doneKey, sha(done));

        const big = randomBytes(8 * 1024 * 1024);
        const key = `cut-${round}`;
        const killAt = Math.floor(Math.random() * (big.length + 512 * 1024));
        interrupted.push({ key, hash: sha(big) });
        const p = proc;
        let kill: Promise<void> | undefined;
        const status = streamUpload(port, key, big, (sent) => {
          if (kill || sent < killAt) return;
          // A kill meant to land mid-body waits (bounded) until the server has started its
          // temporary file: on a loaded machine the server can lag megabytes behind the client,
          // and a kill before its first write would test nothing.
          kill = (async () => {
            const until = Date.now() + 2000;
            while (killAt < big.length && readdirSync(tmp).length === 0 && Date.now() < until)
              await new Promise((r) => setTimeout(r, 2));
            await p.kill9();
          })();
        });
        const s = await status;
        await (kill ?? p.kill9());
        if (s === 200) completed.set(key, sha(big));
        leftBehind += readdirSync(join(dataDir, 'blobs', '.tmp')).length;
      }
      // Kill points are uniform over the body, so some kills land mid-write and leave a temporary
      // file (1 - (0.5/8.5)^ROUNDS of runs): proof that the start-up cleanup above was exercised.
      assert.ok(leftBehind > 0, 'no kill left a temporary file; the cleanup check proved nothing');
    } finally {
      await proc?.kill9();
    }
  });
});

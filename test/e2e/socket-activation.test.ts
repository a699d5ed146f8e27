// A plain restart loses nothing when the listening socket outlives the process (systemd socket
// activation, deploy/devutil.socket): three devutil processes on one Redis and one S3 bucket behind
// the shipped nginx config, each started as systemd starts a socket-activated service (a launcher
// holds the socket and runs devutil with it as fd 3, LISTEN_FDS and LISTEN_PID), 8 clients uploading
// and downloading through nginx the whole time, and one node stopped with SIGTERM and started again
// as `systemctl restart` does, without a word to nginx. No request may fail, nginx may not see one
// refused or reset connection, and a request sent straight to the node while no process runs is
// answered by the next one.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { startShippedNginx } from '../helpers/balancers.ts';
import type { Nginx } from '../helpers/nginx.ts';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import { missing, toolSkip } from '../helpers/tools.ts';

const LAUNCHER = new URL('../helpers/socket-activate.py', import.meta.url).pathname;
const CLIENTS = 8;
/** Traffic before and after the restart. */
const SETTLE_MS = 1500;

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tally {
  ok: number;
  failures: string[];
}

/** One upload and its download through `base`; anything but 200 and the same bytes is a failure. */
async function roundTrip(base: string, key: string, size: number, t: Tally): Promise<void> {
  const body = randomBytes(size);
  const form = new FormData();
  form.append('file', new Blob([body]), `${key}.bin`);
  try {
    const up = await fetch(`${base}/api/file/${key}`, { method: 'POST', body: form });
    const text = await up.text();
    if (up.status !== 200) {
      t.failures.push(`POST ${key}: ${up.status} ${text.slice(0, 200)}`);
      return;
    }
    t.ok++;
    const down = await fetch(`${base}/api/file/${key}`);
    const got = new Uint8Array(await down.arrayBuffer());
    if (down.status !== 200 || sha(got) !== sha(body))
      t.failures.push(`GET ${key}: ${down.status}, ${got.length} of ${body.length} bytes`);
    else t.ok++;
  } catch (err) {
    t.failures.push(`${key}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`);
  }
}

/**
 * An upload of `file` straight to `url` on a connection of its own; resolves `sent` once the
 * connection is established (by the kernel, into the socket's backlog when no process is accepting)
 * and the whole request written, and `answer` with the status once one comes.
 */
function uploadWhole(url: string, file: Buffer): { sent: Promise<void>; answer: Promise<number> } {
  const b = 'devutil-while-down';
  const body = Buffer.concat([
    Buffer.from(`--${b}\r\ncontent-disposition: form-data; name="file"; filename="gap.bin"\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${b}--\r\n`),
  ]);
  let sent = () => {};
  let failed: (err: unknown) => void = () => {};
  const wasSent = new Promise<void>((resolve, reject) => {
    sent = resolve;
    failed = reject;
  });
  const answer = new Promise<number>((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': `multipart/form-data; boundary=${b}`, 'content-length': body.length },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    // A refused connection fails both: the test must not wait for a `sent` that never comes.
    req.on('error', (err) => {
      failed(err);
      reject(err);
    });
    req.on('finish', sent);
    req.end(body);
  });
  answer.catch(() => {});
  return { sent: wasSent, answer };
}

/** Polls /readyz until it answers 200, for at most `ms`. */
async function waitReady(base: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const status = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > until) throw new Error(`${base} not ready in ${ms} ms (last status ${status})`);
    await sleep(200);
  }
}

describe('a plain restart behind the shipped nginx config, with socket activation', {
  // Socket activation is a Linux service manager's protocol (the launcher uses prctl, too).
  skip:
    (process.platform !== 'linux' && missing('socket activation is Linux-only')) ||
    toolSkip('nginx', ['-v']) ||
    toolSkip('redis-server') ||
    toolSkip('python3'),
  timeout: 300_000,
}, () => {
  let redis: RedisHandle;
  let s3: S3Handle;
  let nodes: DevutilProcess[] = [];
  let nginx: Nginx;

  before(async () => {
    [redis, s3] = await startAll([startRedis(), startS3()]);
    const ports = [await freePort(), await freePort(), await freePort()];
    nodes = await startAll(
      ports.map((port) =>
        startDevutilProcess(
          {
            ...s3.env,
            DEVUTIL_PORT: String(port),
            DEVUTIL_REDIS_URL: redis.url,
            DEVUTIL_TRUST_PROXY: 'loopback',
            DEVUTIL_FILES_RATE_LIMIT: 'off',
            // The shipped timings: drain 5 s (default), keep-alive 5 s (default).
            DEVUTIL_DRAIN_DELAY_MS: '5s',
          },
          [],
          // Three starts at once on a busy machine: more than the default 45 s each.
          { wrapper: ['python3', LAUNCHER, String(port)], startTimeoutMs: 150_000 },
        ),
      ),
    );
    nginx = await startShippedNginx(ports);
  });
  after(async () => {
    await nginx?.close();
    await Promise.allSettled(nodes.map((n) => n.stop()));
    await Promise.allSettled([redis?.stop(), s3?.close()]);
  });

  it('restarts one of three nodes under upload traffic without touching nginx, and no request fails', async () => {
    const node = nodes[1] as DevutilProcess;
    assert.match(node.output(), /listening on the socket systemd passed/, 'devutil took the passed socket');
    const t: Tally = { ok: 0, failures: [] };
    let stop = false;
    const loops = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; !stop; i++)
        await roundTrip(nginx.url, `sa-${c}-${i}`, i % 5 === 4 ? 1 << 20 : 16 << 10, t);
    });
    let gapStatus = 0;
    const gapFile = randomBytes(64 * 1024);
    try {
      await sleep(SETTLE_MS);
      // systemctl restart: stop (SIGTERM: the drain, then exit), then start on the same socket.
      node.proc.kill('SIGUSR1');
      const exited = await node.waitForLine((l) => l.startsWith('socket-activate: exited'), 60_000);
      assert.equal(exited, 'socket-activate: exited 0', 'the node drained and exited cleanly');
      // No process is running now: a request sent to the node waits in the socket's backlog.
      const gap = uploadWhole(`${node.url}/api/file/sent-while-down`, gapFile);
      await gap.sent;
      node.proc.kill('SIGUSR2');
      gapStatus = await gap.answer;
      await waitReady(node.url, 120_000);
      await sleep(SETTLE_MS);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    // The upload sent while no process ran was taken by the next one, and stored.
    assert.equal(gapStatus, 200);
    const stored = await fetch(`${nginx.url}/api/file/sent-while-down`);
    assert.equal(sha(new Uint8Array(await stored.arrayBuffer())), sha(gapFile));
    assert.deepEqual(t.failures, [], nginx.errors());
    assert.ok(t.ok >= 3 * CLIENTS, `only ${t.ok} requests through nginx`);
    // nginx never had to retry: no connection to a node was refused, reset or cut.
    assert.doesNotMatch(nginx.errors(), /refused|reset by peer|prematurely closed/);
    process.stderr.write(
      `socket activation: ${t.ok} requests through nginx across a plain restart, 0 failed\n`,
    );
  });
});

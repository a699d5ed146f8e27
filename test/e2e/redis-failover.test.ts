// A Redis Sentinel failover under traffic (issue 27, acceptance 6): two devutil processes reach a
// primary, a replica and three sentinels (Debian's redis-server and redis-sentinel) through
// DEVUTIL_REDIS_SENTINELS and share one S3 bucket (s3rver). Rate-limited requests from several
// clients and uploads under the files quota run while SENTINEL FAILOVER moves the primary. Asserted:
// nothing is stored past the quota and the count equals the bucket afterwards; a client that used
// up its rate limit before the failover is still refused after it and a new client is limited on the
// new primary; no request fails outside the failover window (a request overlaps it when it was still
// in flight at the failover command or was sent before both nodes' /readyz saw Redis again), and
// inside it only with 503. The window is printed, not asserted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { type BlobStore, createBlobStore } from '../../src/infra/storage/blob-store.ts';
import { type S3Handle, startS3 } from '../fixtures/files/s3.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { type SentinelGroup, startSentinels } from '../helpers/redis.ts';
import { testSecret } from '../helpers/secrets.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const QUOTA = 4 * 1024 * 1024;
const LIMIT = 5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request from a chosen loopback address (one rate-limit client per address); 0: no answer. */
function send(
  url: string,
  o: { method?: string; from?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(url, {
      method: o.method ?? 'GET',
      agent: false,
      localAddress: o.from ?? '127.0.0.1',
      headers: o.headers ?? {},
    });
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  }).catch((err: Error) => ({ status: 0, headers: {}, body: err.message }));
}

function upload(base: string, key: string, size: number): Promise<Answer> {
  const b = `xFAILOVERx${randomBytes(4).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${b}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    randomBytes(size),
    Buffer.from(`\r\n--${b}--\r\n`),
  ]);
  return send(`${base}/api/file/${key}`, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${b}`, 'content-length': String(body.length) },
    body,
  });
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/** True when the node's readiness check, run after `since`, found Redis. */
async function redisReadyOn(base: string, since: number): Promise<boolean> {
  const r = await fetch(`${base}/readyz`).catch(() => null);
  const j = (await r?.json().catch(() => null)) as {
    checkedAt?: string;
    checks?: { redis?: { ok?: boolean } };
  } | null;
  return j?.checks?.redis?.ok === true && Date.parse(j.checkedAt ?? '') > since;
}

/** One request: when it was sent and when its answer ended. */
interface Hit {
  at: number;
  end: number;
  kind: 'ip' | 'upload';
  status: number;
  body: string;
}

describe('a Sentinel failover under traffic', { skip: toolSkip('redis-sentinel'), timeout: 120_000 }, () => {
  const password = testSecret('redis-pw-');
  let group: SentinelGroup | undefined;
  let s3: S3Handle | undefined;
  let bucket: BlobStore | undefined;
  const nodes: DevutilProcess[] = [];

  before(async () => {
    group = await startSentinels({ password });
    s3 = await startS3();
    bucket = await createBlobStore({
      ...(s3.overrides as unknown as Parameters<typeof createBlobStore>[0]),
      dataDir: tempDir(),
      backend: 's3',
    });
    const env = {
      ...s3.env,
      DEVUTIL_REDIS_SENTINELS: group.sentinels.join(','),
      DEVUTIL_REDIS_SENTINEL_NAME: group.name,
      DEVUTIL_REDIS_PASSWORD: password,
      DEVUTIL_IP_RATE_LIMIT: `${LIMIT}/hour`,
      DEVUTIL_FILES_QUOTA_BYTES: String(QUOTA),
      DEVUTIL_FILES_RATE_LIMIT: 'off',
      DEVUTIL_FILES_UPLOAD_RATE_LIMIT: 'off',
      DEVUTIL_FILES_CODEC: 'none',
    };
    // Both or neither: one that came up is stopped when the other did not (after() stops the rest).
    const started = await Promise.allSettled([startDevutilProcess(env), startDevutilProcess(env)]);
    for (const r of started) if (r.status === 'fulfilled') nodes.push(r.value);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });
  after(async () => {
    const logs = nodes.map((n) => n.output()).join('');
    await Promise.all(nodes.map((n) => n.stop()));
    await bucket?.close();
    await s3?.close();
    await group?.stop();
    assert.equal(logs.includes(password), false, 'the Redis password never reaches the log');
  });

  async function inBucket(): Promise<number> {
    let n = 0;
    for await (const e of (bucket as BlobStore).list('files/')) n += e.size;
    for await (const e of (bucket as BlobStore).list('uploads/')) if (e.key.includes('/part-')) n += e.size;
    return n;
  }

  it('keeps the rate limits and the quota, with 503 only inside the failover window', async () => {
    const g = group as SentinelGroup;
    const [a, b] = nodes as [DevutilProcess, DevutilProcess];
    const urls = [a.url, b.url];

    // Before: one client uses up its limit across both nodes; 3 MiB of the 4 MiB quota are stored.
    for (let i = 0; i < LIMIT; i++)
      assert.equal((await send(`${urls[i % 2]}/api/ip`, { from: '127.0.0.2' })).status, 200);
    for (const u of urls) assert.equal((await send(`${u}/api/ip`, { from: '127.0.0.2' })).status, 429);
    const resident = await upload(a.url, 'resident', 3 * 1024 * 1024);
    assert.equal(resident.status, 200, resident.body);
    await g.synced();

    // Traffic: four clients on the limited route, three writers uploading 600 KB files (one fits at a
    // time) and deleting them, a watcher of the bucket.
    const hits: Hit[] = [];
    let done = false;
    let peak = 0;
    const ipClient = async (c: number) => {
      for (let i = 0; !done; i++) {
        const at = Date.now();
        const r = await send(`${urls[(c + i) % 2]}/api/ip`, { from: `127.0.0.${10 + c}` });
        hits.push({ at, end: Date.now(), kind: 'ip', status: r.status, body: r.body.slice(0, 200) });
        await sleep(40);
      }
    };
    const writer = async (w: number) => {
      for (let i = 0; !done; i++) {
        const node = urls[(w + i) % 2] as string;
        const key = `w${w}-${i}`;
        const at = Date.now();
        const r = await upload(node, key, 600_000);
        hits.push({ at, end: Date.now(), kind: 'upload', status: r.status, body: r.body.slice(0, 200) });
        if (r.status === 200) {
          // A delete refused with 503 inside the failover window is sent again: a file left behind
          // would hold the quota full, and every upload after the failover would be 507.
          for (let t = 0; t < 100; t++) {
            const d = await send(`${node}/api/file/${key}`, {
              method: 'DELETE',
              headers: { 'x-owner-token': String(r.headers['x-owner-token']) },
            });
            if (d.status !== 503 && d.status !== 0) break;
            await sleep(100);
          }
        } else await sleep(50);
      }
    };
    const watcher = async () => {
      while (!done) {
        peak = Math.max(peak, await inBucket());
        await sleep(100);
      }
    };
    const running = Promise.all([...[0, 1, 2, 3].map(ipClient), ...[0, 1, 2].map(writer), watcher()]);
    // The traffic stops whatever happens below: a failover that never completes must not leave it
    // running (its timers would keep the test file alive until the runner's per-file timeout).
    let [t0, tPromoted, tMoved, tSettled, from, to] = [0, 0, 0, 0, 0, 0];
    try {
      await sleep(1500);
      t0 = Date.now();
      ({ from, to } = await g.failover());
      tPromoted = Date.now();
      // The window ends when each node has moved to the new primary (its log says so) and a readiness
      // check run after that found Redis.
      const moved = (n: DevutilProcess) =>
        n
          .output()
          .split('\n')
          .some((l) => l.includes('redis reconnected'));
      for (let i = 0; i < 300 && !(moved(a) && moved(b)); i++) await sleep(100);
      tMoved = Date.now();
      for (let i = 0; i < 300; i++) {
        if ((await redisReadyOn(a.url, tMoved)) && (await redisReadyOn(b.url, tMoved))) break;
        await sleep(100);
      }
      tSettled = Date.now();
      await sleep(2500);
    } finally {
      done = true;
      await running;
    }
    hits.sort((x, y) => x.at - y.at);

    const failed = (h: Hit) => h.status === 0 || (h.status >= 500 && h.status !== 507);
    const bad = hits.filter(failed);
    // A request still in flight when the failover began, or sent before the nodes settled, is in
    // the window: the quota holds reservations from the sentinels' first failover event on.
    const before = hits.filter((h) => h.end < t0);
    const afterward = hits.filter((h) => h.at > tSettled);
    const first = bad[0]?.at;
    const last = bad.at(-1)?.at;
    const uploads = hits.filter((h) => h.kind === 'upload');
    process.stdout.write(
      `redis failover ${from} -> ${to}: promoted after ${tPromoted - t0} ms, both nodes moved after ${tMoved - t0} ms and ready after ${tSettled - t0} ms; ` +
        `${hits.length} requests (${uploads.length} uploads: ${uploads.filter((h) => h.status === 200).length} stored, ` +
        `${uploads.filter((h) => h.status === 507).length} quota full); ${bad.length} failed ` +
        `(${[...new Set(bad.map((h) => `${h.kind} ${h.status}`))].join(', ') || 'none'})` +
        (first !== undefined ? `, from +${first - t0} ms to +${(last ?? first) - t0} ms` : '') +
        `; peak stored ${peak} of ${QUOTA} bytes; load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}\n`,
    );
    const phase = (hs: Hit[]) => {
      const n = new Map<string, number>();
      for (const h of hs) n.set(`${h.kind} ${h.status}`, (n.get(`${h.kind} ${h.status}`) ?? 0) + 1);
      return [...n].map(([k, v]) => `${k}: ${v}`).join(', ');
    };
    process.stdout.write(
      `  before: ${phase(before)}\n  window: ${phase(hits.filter((h) => h.end >= t0 && h.at <= tSettled))}\n  after: ${phase(afterward)}\n`,
    );

    assert.ok(before.length > 0 && afterward.length > 0, 'traffic ran before and after the failover');
    assert.deepEqual(before.filter(failed), [], 'nothing failed before the failover');
    assert.deepEqual(afterward.filter(failed), [], 'nothing failed once both nodes saw Redis again');
    assert.deepEqual(
      bad.filter((h) => h.status !== 503),
      [],
      'inside the window a request is refused with 503, never dropped or answered 500',
    );
    if (!afterward.some((h) => h.kind === 'upload' && h.status === 200)) {
      // What held the quota full: the bucket's keys and what each node counts.
      const keys: string[] = [];
      for await (const e of (bucket as BlobStore).list('')) keys.push(`${e.key} ${e.size}`);
      const counts = await Promise.all(
        urls.map(
          async (u) =>
            `${await metric(u, 'devutil_files_stored_bytes')} used, ${await metric(u, 'devutil_files_reserved_bytes')} reserved`,
        ),
      );
      assert.fail(
        `no upload was stored after the failover; bucket: ${keys.join(', ')}; nodes: ${counts.join('; ')}`,
      );
    }
    assert.ok(peak <= QUOTA, `${peak} bytes stored under a quota of ${QUOTA}`);

    // The rate limit still holds: the client that used it up before is refused on both nodes, and a
    // new client is counted on the new primary.
    for (const u of urls) assert.equal((await send(`${u}/api/ip`, { from: '127.0.0.2' })).status, 429);
    const fresh: number[] = [];
    for (let i = 0; i <= LIMIT; i++)
      fresh.push((await send(`${urls[i % 2]}/api/ip`, { from: '127.0.0.3' })).status);
    assert.deepEqual(fresh, [...Array(LIMIT).fill(200), 429]);

    // The count equals the bucket (bounded wait for settles and the check against the store).
    let store = await inBucket();
    let used = await metric(a.url, 'devutil_files_stored_bytes');
    let reserved = await metric(b.url, 'devutil_files_reserved_bytes');
    for (let i = 0; i < 300 && (used !== store || reserved !== 0); i++) {
      await sleep(100);
      store = await inBucket();
      used = await metric(urls[i % 2] as string, 'devutil_files_stored_bytes');
      reserved = await metric(urls[(i + 1) % 2] as string, 'devutil_files_reserved_bytes');
    }
    assert.ok(store <= QUOTA, `${store} bytes stored under a quota of ${QUOTA}`);
    assert.deepEqual(
      { used, reserved },
      { used: store, reserved: 0 },
      'the quota counts what the bucket holds',
    );
    assert.equal(await g.primaryPort(), to);
  });
});

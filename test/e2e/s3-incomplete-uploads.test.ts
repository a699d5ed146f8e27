// kill -9 during a large S3 upload and a tus PATCH leaves incomplete multipart uploads in the bucket
// (a listing of objects never shows them); the next start aborts them. Uploads outside devutil's
// namespaces, and one inside that is younger than the safe age (another node's upload in flight),
// are left alone. A node whose data directory survives the kill knows its own orphans: it aborts
// them at its next start whatever their age. Needs a store with ListMultipartUploads: a
// single-node Ceph radosgw.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { type RadosgwHandle, radosgwSkip, startRadosgw } from '../helpers/radosgw.ts';
import { tempDir } from '../helpers/server.ts';
import { create } from '../helpers/tus.ts';

/** The safe age set for this test: long enough for a busy machine's sweep, short enough to wait out. */
const AGE_SEC = 8;
const MiB = 1024 * 1024;

describe('incomplete multipart uploads after kill -9', { skip: radosgwSkip(), timeout: 240_000 }, () => {
  let rgw: RadosgwHandle;
  let s3: S3Client;
  let dev: DevutilProcess | undefined;
  const env = () => ({
    ...rgw.env,
    DEVUTIL_STORAGE_S3_ABORT_INCOMPLETE_AFTER_SEC: String(AGE_SEC),
    DEVUTIL_FILES_SWEEP_INTERVAL_SEC: '1',
    // The sweeps' log lines are read below.
    DEVUTIL_LOG_FORMAT: 'json',
  });
  before(async () => {
    rgw = await startRadosgw();
    s3 = new S3Client({
      endpoint: rgw.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    });
  });
  after(async () => {
    await dev?.kill9();
    s3?.destroy();
    await rgw?.stop();
  });

  const pending = async () => {
    const r = await s3.send(new ListMultipartUploadsCommand({ Bucket: rgw.bucket }));
    return (r.Uploads ?? []).map((u) => ({
      key: u.Key as string,
      id: u.UploadId as string,
      at: (u.Initiated as Date).getTime(),
    }));
  };
  const begin = async (key: string) => {
    const m = await s3.send(new CreateMultipartUploadCommand({ Bucket: rgw.bucket, Key: key }));
    await s3.send(
      new UploadPartCommand({
        Bucket: rgw.bucket,
        Key: key,
        UploadId: m.UploadId,
        PartNumber: 1,
        Body: Buffer.alloc(4096, 1),
      }),
    );
    return m.UploadId as string;
  };
  /** A request that announces `total` bytes, sends `send` of them and then waits with the socket open. */
  const hanging = (
    url: string,
    method: string,
    headers: Record<string, string>,
    send: number,
    total: number,
  ) => {
    const req = request(url, { method, headers: { ...headers, 'content-length': String(total) } });
    req.on('error', () => {});
    // Random bytes: text would be compressed on the way to the store and never fill a part.
    req.write(randomBytes(send));
    return req;
  };

  it('aborts the uploads a killed process left, and only those', async () => {
    dev = await startDevutilProcess(env());
    // A safe age shorter than the request timeout is this test's choice, and devutil says it is risky.
    assert.match(dev.output(), /s3AbortIncompleteAfterSec is not longer than a request may run/);
    // A large upload the transfer.sh way, and a tus PATCH: both cut with more than one 8 MiB part sent.
    const big = hanging(`${dev.url}/big.bin`, 'PUT', {}, 20 * MiB, 64 * MiB);
    const made = await create(dev.url, 64 * MiB, { filename: 'resumable.bin' });
    assert.equal(made.status, 201, await made.text());
    const tusUrl = new URL(made.headers.get('location') as string, dev.url).href;
    const tus = hanging(
      tusUrl,
      'PATCH',
      { 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      20 * MiB,
      64 * MiB,
    );
    // Both writers have started their multipart uploads (and sent parts) when radosgw lists them.
    let left: Awaited<ReturnType<typeof pending>> = [];
    for (let i = 0; i < 600 && left.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      left = await pending();
    }
    assert.equal(left.length, 2, `two incomplete uploads in flight: ${JSON.stringify(left)}`);
    assert.ok(
      left.some((u) => u.key.startsWith('.staging/')),
      'the PUT writes through a staging key',
    );
    assert.ok(
      left.some((u) => u.key.startsWith('uploads/')),
      'the PATCH writes a part of the upload',
    );
    await dev.kill9();
    big.destroy();
    tus.destroy();
    dev = undefined;

    // Still there after the crash: nothing else would ever remove them.
    const orphans = await pending();
    assert.deepEqual(orphans.map((u) => u.id).sort(), left.map((u) => u.id).sort());
    const outside = await begin('backups/nightly.tar');

    // Wait out the safe age so the orphans are old enough at the next start (radosgw runs on this
    // machine: its clock is ours).
    const newest = Math.max(...orphans.map((u) => u.at));
    while (Date.now() < newest + AGE_SEC * 1000 + 500) await new Promise((r) => setTimeout(r, 200));
    dev = await startDevutilProcess(env());
    const after1 = await pending();
    for (const o of orphans) assert.ok(!after1.some((u) => u.id === o.id), `aborted at start-up: ${o.key}`);
    assert.ok(
      after1.some((u) => u.id === outside),
      'an upload outside devutil namespaces is untouched',
    );
    assert.match(dev.output(), /incomplete s3 multipart uploads/);

    // An upload in flight elsewhere (younger than the safe age) survives the sweeper, which runs
    // every second here: the sweep that saw it says so in its log line.
    const fresh = await begin('files/in-flight-on-another-node');
    const seen = dev.output().length;
    for (let i = 0; i < 600 && !/"inFlight":1\b/.test(dev.output().slice(seen)); i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.match(dev.output().slice(seen), /"inFlight":1\b/, 'a sweep ran after the fresh upload began');
    const after2 = await pending();
    assert.ok(
      after2.some((u) => u.id === fresh),
      'a fresh upload under files/ is untouched',
    );
    assert.ok(
      after2.some((u) => u.id === outside),
      'the upload outside is still untouched',
    );
    // Nothing else of devutil's is pending: the killed uploads did not come back.
    assert.deepEqual(
      after2.filter((u) => u.id !== fresh && u.id !== outside).map((u) => u.key),
      [],
    );
  });

  it('aborts the uploads its own killed process left at the next start, long before the safe age', async () => {
    await dev?.stop();
    // The node's data directory outlives its processes, as /var/lib/devutil does; the safe age is
    // the default (over an hour), so only the node's own record can explain an abort.
    const node = { ...rgw.env, DEVUTIL_DATA_DIR: tempDir(), DEVUTIL_LOG_FORMAT: 'json' };
    dev = await startDevutilProcess(node);
    const before = new Set((await pending()).map((u) => u.id));
    const big = hanging(`${dev.url}/big.bin`, 'PUT', {}, 20 * MiB, 64 * MiB);
    let mine: Awaited<ReturnType<typeof pending>> = [];
    for (let i = 0; i < 600 && mine.length < 1; i++) {
      await new Promise((r) => setTimeout(r, 100));
      mine = (await pending()).filter((u) => !before.has(u.id));
    }
    assert.equal(mine.length, 1, 'the PUT has its multipart upload in flight');
    // On record before its first part is sent (the store lists it a moment before that).
    const journal = join(node.DEVUTIL_DATA_DIR, 's3-uploads');
    for (let i = 0; i < 100 && journalFiles(journal).length === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(journalFiles(journal).length, 1, 'and the node has it on record');
    // Another node's upload in flight in the same bucket: not this node's to abort.
    const neighbour = await begin('files/another-node-in-flight');
    await dev.kill9();
    big.destroy();
    dev = undefined;
    assert.ok(
      (await pending()).some((u) => u.id === mine[0]?.id),
      'the killed upload is still there',
    );

    dev = await startDevutilProcess(node);
    const left = await pending();
    assert.equal(
      left.some((u) => u.id === mine[0]?.id),
      false,
      'aborted at start-up, before the node answered',
    );
    assert.ok(
      left.some((u) => u.id === neighbour),
      "another node's young upload is untouched",
    );
    assert.match(
      dev.output(),
      /"aborted":1,"msg":"multipart uploads a killed process of this node left aborted/,
    );
    assert.deepEqual(journalFiles(journal), [], 'the record is cleared');
  });
});

/** The journal entries under <dataDir>/s3-uploads/<host>/. */
function journalFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((host) => readdirSync(join(dir, host)));
}

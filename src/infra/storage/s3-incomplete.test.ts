// Aborting incomplete multipart uploads, against a real S3 that lists them (Ceph radosgw) and one
// that does not (s3rver): only under the given prefixes, only past the safe age, across pages.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { startS3 } from '../../../test/fixtures/files/s3.ts';
import { CLOSED_PORT } from '../../../test/helpers/ports.ts';
import { type RadosgwHandle, radosgwSkip, startRadosgw } from '../../../test/helpers/radosgw.ts';
import { incompleteUploadAgeMs } from './blob-store.ts';
import { S3BlobStore } from './s3.ts';
import { abortIncompleteUploads, MultipartListingUnsupported } from './s3-incomplete.ts';

function recorder() {
  const lines: { level: string; msg: string }[] = [];
  const at =
    (level: string) =>
    (a: unknown, b?: unknown): void => {
      lines.push({ level, msg: String(typeof a === 'string' ? a : b) });
    };
  return { lines, logger: { info: at('info'), warn: at('warn'), debug: at('debug') } as never };
}

describe('incomplete upload age', () => {
  it('is the explicit setting when given', () => {
    assert.equal(
      incompleteUploadAgeMs({ explicitSec: 90, requestTimeoutMs: 3_600_000, uploadExpirySec: 1 }),
      90_000,
    );
  });
  it('is the request timeout plus 15 minutes, at least an hour', () => {
    const h = 3_600_000;
    assert.equal(
      incompleteUploadAgeMs({ explicitSec: 0, requestTimeoutMs: h, uploadExpirySec: 86_400 }),
      h + 900_000,
    );
    assert.equal(
      incompleteUploadAgeMs({ explicitSec: 0, requestTimeoutMs: 60_000, uploadExpirySec: 86_400 }),
      h,
    );
  });
  it('is the resumable-upload expiry plus 15 minutes when requests have no timeout', () => {
    assert.equal(
      incompleteUploadAgeMs({ explicitSec: 0, requestTimeoutMs: 0, uploadExpirySec: 86_400 }),
      86_400_000 + 900_000,
    );
  });
});

describe('abortIncompleteUploads against Ceph radosgw', { skip: radosgwSkip(), timeout: 180_000 }, () => {
  let rgw: RadosgwHandle;
  let s3: S3Client;
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
    s3?.destroy();
    await rgw?.stop();
  });

  const begin = async (key: string) => {
    const m = await s3.send(new CreateMultipartUploadCommand({ Bucket: rgw.bucket, Key: key }));
    await s3.send(
      new UploadPartCommand({
        Bucket: rgw.bucket,
        Key: key,
        UploadId: m.UploadId,
        PartNumber: 1,
        Body: Buffer.alloc(1024, 7),
      }),
    );
    return m.UploadId as string;
  };
  const pending = async (prefix = '') => {
    const r = await s3.send(new ListMultipartUploadsCommand({ Bucket: rgw.bucket, Prefix: prefix }));
    return (r.Uploads ?? []).map((u) => ({
      key: u.Key as string,
      id: u.UploadId as string,
      at: u.Initiated as Date,
    }));
  };

  it('aborts old uploads under the prefixes and leaves young ones and other prefixes alone', async () => {
    const old1 = await begin('files/t1/big');
    const old2 = await begin('.staging/t1-1234');
    const outside = await begin('backups/t1/db.dump');
    const lookalike = await begin('filesystem/t1/x');
    // The store's clock, not ours, decides: wait until a later upload is visibly younger.
    const firstAt = Math.max(...(await pending()).map((u) => u.at.getTime()));
    while (Date.now() < firstAt + 1100) await new Promise((r) => setTimeout(r, 100));
    const young = await begin('uploads/t1/part-0');
    const youngAt = (await pending('uploads/t1/')).find((u) => u.id === young)?.at.getTime();
    assert.ok(youngAt !== undefined && youngAt > firstAt, 'the young upload was initiated later');

    const r = await abortIncompleteUploads({
      client: s3,
      bucket: rgw.bucket,
      prefixes: ['.staging/', 'files/', 'uploads/'],
      olderThanMs: youngAt - firstAt,
      now: () => youngAt,
    });
    assert.deepEqual(r, { aborted: 2, young: 1 });
    const left = new Set((await pending()).map((u) => u.id));
    assert.ok(!left.has(old1) && !left.has(old2), 'the old uploads under the prefixes were aborted');
    assert.ok(left.has(young), 'the young upload under a prefix is untouched');
    assert.ok(left.has(outside) && left.has(lookalike), 'uploads outside the prefixes are untouched');
  });

  it('follows the listing across pages', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await begin(`avatars/t2/${i % 2}`));
    const r = await abortIncompleteUploads({
      client: s3,
      bucket: rgw.bucket,
      prefixes: ['avatars/'],
      olderThanMs: 1,
      now: () => Date.now() + 60_000,
      pageSize: 2,
    });
    assert.equal(r.aborted, 5);
    assert.deepEqual(await pending('avatars/'), []);
  });

  it('runs in the S3 blob store at start-up and in its sweep, logging what it aborted', async () => {
    const id = await begin('telegram/t3/record');
    const { lines, logger } = recorder();
    // A negative age makes every upload old enough (the store's clock may be behind this one).
    const store = new S3BlobStore({ ...storeOptions(rgw), incompleteUploadAgeMs: -60_000, logger });
    try {
      const r = await store.init();
      assert.ok(r.aborted >= 1);
      assert.ok(!(await pending()).some((u) => u.id === id), 'the upload was aborted');
      assert.ok(lines.some((l) => l.level === 'info' && /multipart uploads swept/.test(l.msg)));
      assert.deepEqual(await store.sweepAbandoned(), { removed: 0, aborted: 0 });
    } finally {
      await store.close();
    }
  });
});

function storeOptions(h: { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string }) {
  return {
    endpoint: h.endpoint,
    bucket: h.bucket,
    region: 'us-east-1',
    accessKeyId: h.accessKeyId,
    secretAccessKey: h.secretAccessKey,
    forcePathStyle: true,
  };
}

describe('stores without multipart listing', { timeout: 60_000 }, () => {
  it('s3rver: says once at info that it cannot list, and the store keeps working', async () => {
    const srv = await startS3();
    const { lines, logger } = recorder();
    const store = new S3BlobStore({
      ...storeOptions({
        endpoint: srv.endpoint,
        bucket: srv.bucket,
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
      }),
      logger,
    });
    try {
      await assert.rejects(
        abortIncompleteUploads({
          client: store.client,
          bucket: srv.bucket,
          prefixes: ['files/'],
          olderThanMs: 0,
        }),
        MultipartListingUnsupported,
      );
      assert.deepEqual(await store.init(), { removed: 0, aborted: 0 });
      await store.sweepAbandoned();
      const said = lines.filter((l) => /ListMultipartUploads/.test(l.msg));
      assert.equal(said.length, 1);
      assert.equal(said[0]?.level, 'info');
      assert.ok(!lines.some((l) => l.level === 'warn'));
    } finally {
      await store.close();
      await srv.close();
    }
  });

  it('an unreachable store: warns once, then only at debug, never throws', async () => {
    const { lines, logger } = recorder();
    const store = new S3BlobStore({
      ...storeOptions({
        endpoint: `http://127.0.0.1:${CLOSED_PORT}`,
        bucket: 'b-x',
        accessKeyId: 'a',
        secretAccessKey: 'b',
      }),
      logger,
    });
    try {
      assert.deepEqual(await store.sweepAbandoned(), { removed: 0, aborted: 0 });
      assert.deepEqual(await store.sweepAbandoned(), { removed: 0, aborted: 0 });
      assert.deepEqual(
        lines.map((l) => l.level),
        ['warn', 'debug'],
      );
    } finally {
      await store.close();
    }
  });
});

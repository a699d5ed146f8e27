// The blob store contract, run against both backends: local disk and S3 (a local s3rver).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { startS3 } from '../../../test/fixtures/files/s3.ts';
import { killMidWrite } from '../../../test/helpers/kill-writer.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { BlobExistsError, type BlobStore, createBlobStore } from './blob-store.ts';
import { FsBlobStore } from './fs.ts';

const S3_ENV = {
  dataDir: '',
  s3Endpoint: '',
  s3Bucket: '',
  s3Region: 'us-east-1',
  s3AccessKeyId: '',
  s3SecretAccessKey: '',
  s3ForcePathStyle: true,
};

function failing(after: string): Readable {
  return new Readable({
    read() {
      this.push(Buffer.from(after));
      this.destroy(new Error('client went away'));
    },
  });
}

for (const backend of ['fs', 's3'] as const) {
  describe(`blob store (${backend})`, () => {
    let store: BlobStore;
    let closeS3 = async () => {};
    before(async () => {
      if (backend === 's3') {
        const s3 = await startS3();
        closeS3 = s3.close;
        store = await createBlobStore({
          ...S3_ENV,
          backend: 's3',
          s3Endpoint: s3.endpoint,
          s3Bucket: s3.bucket,
          s3AccessKeyId: 'S3RVER',
          s3SecretAccessKey: 'S3RVER',
        });
      } else {
        store = await createBlobStore({ ...S3_ENV, backend: 'fs', dataDir: tempDir() });
      }
    });
    after(async () => {
      await store.close();
      await closeS3();
    });

    it('stores bytes and unicode metadata and reads them back, whole and by range', async () => {
      const info = await store.put('t/a.txt', Readable.from([Buffer.from('hello '), Buffer.from('world')]), {
        filename: 'résumé ✓.txt',
      });
      assert.equal(info.size, 11);
      const got = await store.get('t/a.txt');
      assert.ok(got);
      assert.equal(await text(got.body), 'hello world');
      assert.equal(got.info.meta['filename'], 'résumé ✓.txt');
      const part = await store.get('t/a.txt', { start: 6, end: 9 });
      assert.ok(part);
      assert.equal(await text(part.body), 'worl');
      assert.equal(part.info.size, 11);
      const head = await store.head('t/a.txt');
      assert.equal(head?.size, 11);
    });

    it('merges finalize() metadata computed after the body', async () => {
      let seen = 0;
      const body = Readable.from([Buffer.from('abc')]).on('data', (c: Buffer) => {
        seen += c.length;
      });
      await store.put('t/fin', body, { a: '1' }, { finalize: () => ({ b: String(seen) }) });
      const head = await store.head('t/fin');
      assert.deepEqual({ a: head?.meta['a'], b: head?.meta['b'] }, { a: '1', b: '3' });
    });

    it('refuses a create-only put on an existing key and keeps the first version', async () => {
      await store.put('t/once', Readable.from([Buffer.from('first')]), {}, { ifAbsent: true });
      await assert.rejects(
        store.put('t/once', Readable.from([Buffer.from('second')]), {}, { ifAbsent: true }),
        BlobExistsError,
      );
      const got = await store.get('t/once');
      assert.equal(await text(got!.body), 'first');
    });

    it('lets exactly one of two concurrent create-only puts win', async () => {
      const results = await Promise.allSettled(
        ['one', 'two'].map((v) =>
          store.put('t/race', Readable.from([Buffer.from(v)]), {}, { ifAbsent: true, finalize: () => ({}) }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const rejected = results.find((r) => r.status === 'rejected');
      assert.ok(rejected && rejected.reason instanceof BlobExistsError);
    });

    it('leaves nothing visible and the old version intact when the body fails or finalize throws', async () => {
      await store.put('t/keep', Readable.from([Buffer.from('old')]), {});
      await assert.rejects(store.put('t/keep', failing('new partial'), {}));
      await assert.rejects(
        store.put(
          't/keep',
          Readable.from([Buffer.from('new')]),
          {},
          {
            finalize: () => {
              throw new Error('not worth it');
            },
          },
        ),
      );
      assert.equal(await text((await store.get('t/keep'))!.body), 'old');
      await assert.rejects(store.put('t/never', failing('x'), {}));
      assert.equal(await store.head('t/never'), null);
    });

    it('handles empty blobs, deletes, lists by prefix and rejects unsafe keys', async () => {
      await store.put('t/empty', Readable.from([]), {});
      const got = await store.get('t/empty');
      assert.equal(got?.info.size, 0);
      assert.equal(await text(got!.body), '');
      assert.equal(await store.delete('t/empty'), true);
      assert.equal(await store.delete('t/empty'), false);
      assert.equal(await store.get('t/empty'), null);
      await store.put('u/x', Readable.from([Buffer.from('1')]), {});
      const keys: string[] = [];
      for await (const e of store.list('u/')) keys.push(e.key);
      assert.deepEqual(keys, ['u/x']);
      for (const bad of ['../x', 't/../x', '/abs', 't//x', '.hidden', 't/.tmp', 'a\\b', '']) {
        await assert.rejects(store.put(bad, Readable.from([]), {}), /invalid blob key/, bad);
      }
      for (const k of ['Upper', 'under_score', 'x y', '']) {
        await assert.rejects(store.put('t/meta', Readable.from([]), { [k]: 'v' }), /metadata key/, k);
      }
      assert.equal(await store.head('t/meta'), null);
      await store.ping();
    });
  });
}

describe('fs blob store start-up', () => {
  it('removes temporary files of dead writers and keeps published blobs', async () => {
    const root = join(tempDir(), 'blobs');
    const first = new FsBlobStore(root);
    await first.init();
    await first.put('files/kept', Readable.from([Buffer.from('ok')]), {});
    // What a writer killed with -9 mid-upload leaves: a temporary file named after its pid.
    await mkdir(first.tmpDir, { recursive: true });
    writeFileSync(join(first.tmpDir, '999999999-dead'), 'partial');
    const { removed } = await new FsBlobStore(root).init();
    assert.equal(removed, 1);
    assert.deepEqual(readdirSync(first.tmpDir), []);
    assert.ok(existsSync(join(root, 'files', 'kept')));
    assert.equal(await text((await first.get('files/kept'))!.body), 'ok');
  });

  it('after kill -9 of a writer mid-upload shows no partial blob and removes its temporary file on restart', async () => {
    const root = join(tempDir(), 'blobs');
    const mod = new URL('./fs.ts', import.meta.url).pathname;
    // A real writer process that streams 1 MiB into a put and then stalls, never finishing it.
    const code = `
      import { Readable } from 'node:stream';
      import { FsBlobStore } from ${JSON.stringify(mod)};
      const store = new FsBlobStore(${JSON.stringify(root)});
      await store.init();
      let n = 0;
      const body = new Readable({ read() { if (n++ < 16) this.push(Buffer.alloc(65536, 7)); } });
      await store.put('files/victim', body, {});
    `;
    const tmp = join(root, '.tmp');
    await killMidWrite(code, tmp, 1024 * 1024);
    const restarted = new FsBlobStore(root);
    assert.equal(await restarted.head('files/victim'), null);
    const { removed } = await restarted.init();
    assert.equal(removed, 1);
    assert.deepEqual(readdirSync(tmp), []);
    assert.equal(await restarted.head('files/victim'), null);
  });
});

describe('fs blob store layout', () => {
  const fresh = async () => {
    const store = new FsBlobStore(join(tempDir(), 'blobs'));
    await store.init();
    return store;
  };
  const bodies = (store: FsBlobStore) =>
    readdirSync(store.dataDir).flatMap((s) => readdirSync(join(store.dataDir, s)).map((n) => `${s}/${n}`));

  it('keeps each body alone in its own file, which a front proxy can send as is', async () => {
    const store = await fresh();
    const bytes = Buffer.from('exactly these bytes, nothing after them');
    const info = await store.put('files/a', Readable.from([bytes]), { filename: 'a.txt' });
    assert.ok(info.bodyFile);
    assert.deepEqual(readFileSync(join(store.dataDir, info.bodyFile)), bytes);
    assert.equal((await store.head('files/a'))?.bodyFile, info.bodyFile);
    assert.deepEqual(bodies(store), [info.bodyFile]);
  });

  it('removes the replaced body on replace and the body on delete, leaving no orphan', async () => {
    const store = await fresh();
    const first = await store.put('files/r', Readable.from([Buffer.from('one')]), {});
    const second = await store.put('files/r', Readable.from([Buffer.from('two')]), {});
    assert.notEqual(first.bodyFile, second.bodyFile);
    assert.deepEqual(bodies(store), [second.bodyFile]);
    await assert.rejects(store.put('files/r', Readable.from([Buffer.from('x')]), {}, { ifAbsent: true }));
    assert.deepEqual(bodies(store), [second.bodyFile], 'a refused create-only put leaves no body');
    const many = await Promise.all(
      [...'abcdefgh'].map((v) => store.put('files/r', Readable.from([Buffer.from(v)]), { v })),
    );
    const current = await store.head('files/r');
    assert.ok(many.some((m) => m.bodyFile === current?.bodyFile));
    assert.deepEqual(bodies(store), [current?.bodyFile], 'concurrent replacements leave one body');
    assert.equal(await store.delete('files/r'), true);
    assert.deepEqual(bodies(store), []);
    assert.deepEqual(readdirSync(store.tmpDir), []);
  });

  it('removes the directories a delete leaves empty and keeps those still in use', async () => {
    const store = await fresh();
    for (const k of ['uploads/u1/info', 'uploads/u1/part-0', 'uploads/u2/info'])
      await store.put(k, Readable.from([Buffer.from(k)]), {});
    assert.equal(await store.delete('uploads/u1/part-0'), true);
    assert.deepEqual(readdirSync(join(store.root, 'uploads', 'u1')), ['info']);
    assert.equal(await store.delete('uploads/u1/info'), true);
    assert.deepEqual(readdirSync(join(store.root, 'uploads')), ['u2'], 'u1/ went with its last key');
    assert.equal(await store.delete('uploads/u2/info'), true);
    assert.equal(existsSync(join(store.root, 'uploads')), false, 'so did the namespace');
    assert.ok(existsSync(store.dataDir) && existsSync(store.tmpDir), 'the store’s own directories stay');
    // A put into a directory whose last key is being deleted lands, whichever finishes first (the
    // narrow case, a prune between the put's mkdir and its rename, is retried in FsBlobStore.inDir).
    for (let i = 0; i < 10; i++) {
      await store.put(`uploads/r${i}/a`, Readable.from([Buffer.from('a')]), {});
      await Promise.all([
        store.delete(`uploads/r${i}/a`),
        store.put(`uploads/r${i}/b`, Readable.from([Buffer.from('b')]), {}),
      ]);
      assert.equal((await store.head(`uploads/r${i}/b`))?.size, 1);
    }
  });

  it('reads, lists, replaces and deletes blobs written in the earlier one-file format', async () => {
    const store = await fresh();
    const body = Buffer.from('legacy bytes');
    const json = Buffer.from(
      JSON.stringify({ meta: { filename: 'old.txt' }, mtime: '2025-01-02T03:04:05.000Z' }),
    );
    const tail = Buffer.alloc(8);
    tail.writeUInt32BE(json.length, 0);
    Buffer.from('DUB1').copy(tail, 4);
    await mkdir(join(store.root, 'files'), { recursive: true });
    writeFileSync(join(store.root, 'files', 'old'), Buffer.concat([body, json, tail]));
    const head = await store.head('files/old');
    assert.equal(head?.size, body.length);
    assert.equal(head?.meta['filename'], 'old.txt');
    assert.equal(head?.bodyFile, undefined, 'no separate body file to offload');
    assert.equal(await text((await store.get('files/old'))!.body), 'legacy bytes');
    assert.equal(await text((await store.get('files/old', { start: 7, end: 11 }))!.body), 'bytes');
    const listed: { key: string; size: number }[] = [];
    for await (const e of store.list('files/')) listed.push({ key: e.key, size: e.size });
    assert.deepEqual(listed, [{ key: 'files/old', size: body.length }]);
    await store.put('files/old', Readable.from([Buffer.from('new')]), {});
    assert.equal(await text((await store.get('files/old'))!.body), 'new');
    assert.equal(await store.delete('files/old'), true);
    assert.equal(await store.head('files/old'), null);
    assert.deepEqual(bodies(store), []);
  });

  it('a reader racing replacements always gets one whole version', async () => {
    const store = await fresh();
    const size = (i: number) => 20_000 + i * 997;
    await store.put('files/k', Readable.from([Buffer.alloc(size(0), 0)]), { i: '0' });
    let writing = true;
    const writes = (async () => {
      for (let i = 1; i <= 15; i++)
        await store.put('files/k', Readable.from([Buffer.alloc(size(i), i)]), { i: String(i) });
      writing = false;
    })();
    const versions = new Set<number>();
    const reader = async () => {
      while (writing) {
        const got = await store.get('files/k');
        assert.ok(got, 'a read during replacement found nothing');
        const buf = await buffer(got.body);
        const v = Number(got.info.meta['i']);
        versions.add(v);
        assert.equal(buf.length, size(v));
        assert.ok(
          buf.every((b) => b === v),
          `mixed bytes in version ${v}`,
        );
      }
    };
    await Promise.all([writes, reader(), reader(), reader()]);
    assert.ok(versions.size > 3, `the readers saw ${versions.size} versions`);
    assert.equal(bodies(store).length, 1);
  });

  it('sweeps bodies no record names once they are an hour old, and keeps the rest', async () => {
    const store = await fresh();
    const kept = await store.put('files/kept', Readable.from([Buffer.from('ok')]), {});
    mkdirSync(join(store.dataDir, 'ab'), { recursive: true });
    const orphan = join(store.dataDir, 'ab', `ab${'0'.repeat(30)}`);
    const young = join(store.dataDir, 'ab', `ab${'1'.repeat(30)}`);
    writeFileSync(orphan, 'left by a crash between the two renames');
    writeFileSync(young, 'a put about to publish its record');
    const old = (Date.now() - 2 * 3600 * 1000) / 1000;
    utimesSync(orphan, old, old);
    utimesSync(join(store.dataDir, kept.bodyFile!), old, old);
    assert.equal(await store.sweepOrphans(), 1);
    assert.equal(existsSync(orphan), false);
    assert.equal(existsSync(young), true);
    assert.equal(await text((await store.get('files/kept'))!.body), 'ok');
  });
});

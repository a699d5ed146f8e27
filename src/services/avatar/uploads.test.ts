// Upload lookups on a real fs blob store: remembered per instance, forgotten on a change, and a
// lookup that raced with a change is not remembered (it could hold the old answer for 10 s).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { tempDir } from '../../../test/helpers/server.ts';
import { FsBlobStore } from '../../infra/storage/fs.ts';
import { type Changed, Uploads } from './uploads.ts';

async function store(): Promise<FsBlobStore> {
  const blobs = new FsBlobStore(join(tempDir(), 'blobs'));
  await blobs.init();
  return blobs;
}

const image = () =>
  sharp({ create: { width: 16, height: 16, channels: 3, background: '#208040' } })
    .png()
    .toBuffer();

describe('upload lookups', () => {
  it('remembers a lookup until a change on another instance is announced', async () => {
    const blobs = await store();
    const here = new Uploads(blobs, 1_000_000);
    const there = new Uploads(blobs, 1_000_000);
    const hash = 'a'.repeat(32);
    assert.equal(await here.find(hash, 'md5'), null);
    const announced: Changed[] = [];
    there.onChange = async (c) => void announced.push(c);
    const stored = await there.put(hash, 'md5', null, await image(), 'g');
    assert.deepEqual(announced, [{ sha256: stored.sha256, md5: hash }]);
    assert.equal(await here.find(hash, 'md5'), null, 'still the remembered answer');
    here.forget(announced[0]!.sha256, announced[0]!.md5);
    assert.equal((await here.find(hash, 'md5'))?.version, stored.version);
  });

  it('does not remember a lookup that was under way when a change was announced', async () => {
    const real = await store();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let paused = false;
    // The same store, with the first lookup held until the change has landed and been announced.
    const slow = Object.create(real) as FsBlobStore;
    slow.head = async (key) => {
      const answer = await real.head(key);
      if (!paused) {
        paused = true;
        await gate;
      }
      return answer;
    };
    const here = new Uploads(slow, 1_000_000);
    const there = new Uploads(real, 1_000_000);
    const hash = 'b'.repeat(32);
    const racing = here.find(hash, 'md5');
    const stored = await there.put(hash, 'md5', null, await image(), 'g');
    here.forget(stored.sha256, hash);
    release();
    assert.equal(await racing, null, 'the lookup began before the upload');
    assert.equal((await here.find(hash, 'md5'))?.version, stored.version, 'and was not remembered');
  });

  it('gives two uploads of different images within one second different versions', async () => {
    const blobs = await store();
    const up = new Uploads(blobs, 1_000_000);
    const hash = 'c'.repeat(32);
    const one = await up.put(hash, 'md5', null, await image(), 'g');
    const other = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#802040' } })
      .png()
      .toBuffer();
    const two = await up.put(hash, 'md5', null, other, 'g');
    assert.notEqual(two.version, one.version);
    assert.equal((await up.find(hash, 'md5'))?.version, two.version);
  });
});

// DiceBear styles as d= defaults (d=dicebear-<style>): drawn by the installed @dicebear packages,
// the same picture for the same hash, in every size and format the other styles have; an unknown
// style is an unknown keyword (the configured default); an install without the packages answers
// 501 naming the install line.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { type DevutilProcess, startDevutilProcess } from '../../../test/helpers/process.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { DICEBEAR_STYLES, DicebearMissing, dicebearStyle, installLine } from './gen/dicebear.ts';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const ALICE = md5('alice@example.com');
const BOB = md5('bob@example.com');

describe('DiceBear styles', { timeout: 180_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { avatar: { upstream: 'none', github: false } } });
  });
  after(() => app?.close());

  const get = (path: string) => app.inject({ url: `/avatar/${path}` });
  const png = async (path: string) => {
    const r = await get(path);
    assert.equal(r.statusCode, 200, `${path}: ${r.body.slice(0, 200)}`);
    return r.rawPayload;
  };

  it('renders a style, the same for the same hash, and unlike the identicon and an unknown style', async () => {
    const a = await png(`${ALICE}?d=dicebear-adventurer&s=96`);
    const meta = await sharp(a).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 96, 96]);
    // Real artwork, not a blank or a solid square.
    const { channels } = await sharp(a).stats();
    assert.ok(
      channels.some((c) => c.stdev > 10),
      'the picture has detail',
    );
    assert.ok(a.equals(await png(`${ALICE}?d=dicebear-adventurer&s=96`)), 'deterministic per hash');
    assert.ok(!a.equals(await png(`${BOB}?d=dicebear-adventurer&s=96`)), 'another hash, another picture');
    assert.ok(!a.equals(await png(`${ALICE}?d=identicon&s=96`)), 'not the identicon');
    // An unknown style is an unknown keyword: the configured default (mp), never an error.
    const unknown = await png(`${ALICE}?d=dicebear-nosuch&s=96`);
    assert.ok(!a.equals(unknown), 'not the unknown style’s answer');
    assert.ok(unknown.equals(await png(`${ALICE}?d=mp&s=96`)));
  });

  it('comes in the sizes and formats of the other styles, with the same caching headers', async () => {
    for (const [file, type, format] of [
      [`${ALICE}.jpg`, 'image/jpeg', 'jpeg'],
      [`${ALICE}.webp`, 'image/webp', 'webp'],
      [`${ALICE}.gif`, 'image/gif', 'gif'],
    ] as const) {
      const r = await get(`${file}?d=dicebear-pixel-art&s=40`);
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['content-type'], type);
      assert.equal(r.headers['x-avatar-source'], 'generated');
      const m = await sharp(r.rawPayload).metadata();
      assert.deepEqual([m.format, m.width], [format, 40]);
      const again = await app.inject({
        url: `/avatar/${file}?d=dicebear-pixel-art&s=40`,
        headers: { 'if-none-match': String(r.headers.etag) },
      });
      assert.equal(again.statusCode, 304);
    }
    for (const s of [1, 16, 512])
      assert.equal((await sharp(await png(`${ALICE}?d=dicebear-shapes&s=${s}`)).metadata()).width, s);
  });

  it('offers every style whose licence allows it, and no other', async () => {
    for (const style of DICEBEAR_STYLES) {
      const r = await get(`${BOB}?d=dicebear-${style}&s=32`);
      assert.equal(r.statusCode, 200, `${style}: ${r.body.slice(0, 200)}`);
      assert.equal(r.headers['content-type'], 'image/png', style);
    }
    // Their packages state a licence that is not an open one: not offered, an unknown keyword.
    for (const left of ['avataaars', 'avataaars-neutral', 'bottts', 'bottts-neutral'])
      assert.equal(dicebearStyle(`dicebear-${left}`), null, left);
    assert.equal(dicebearStyle('dicebear-'), null);
    assert.equal(dicebearStyle('adventurer'), null, 'only with the prefix: the bare names are Gravatar’s');
  });

  it('draws DiceBear’s initials from the initials given, else from the hash', async () => {
    const ab = await png(`${ALICE}?d=dicebear-initials&initials=AB&s=64`);
    assert.ok(ab.equals(await png(`${BOB}?d=dicebear-initials&initials=AB&s=64`)));
    assert.ok(!ab.equals(await png(`${ALICE}?d=dicebear-initials&s=64`)));
  });

  describe('without the packages installed', () => {
    let srv: DevutilProcess;
    before(async () => {
      const hook = new URL('../../../test/fixtures/avatar/without-dicebear.mjs', import.meta.url).pathname;
      srv = await startDevutilProcess({
        NODE_OPTIONS: `--import=${hook}`,
        DEVUTIL_AVATAR_UPSTREAM: 'none',
        DEVUTIL_AVATAR_GITHUB: 'false',
      });
    });
    after(() => srv?.stop());

    it('answers 501 naming the install line, and serves the other styles as before', async () => {
      const r = await fetch(`${srv.url}/avatar/${ALICE}?d=dicebear-lorelei`);
      assert.equal(r.status, 501);
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
      const text = await r.text();
      assert.match(text, /the DiceBear style lorelei is not installed on this server/);
      assert.ok(text.includes('npm install @dicebear/core@9 @dicebear/lorelei@9'), text);
      assert.equal((await fetch(`${srv.url}/avatar/${ALICE}?d=identicon`)).status, 200);
    });
  });

  it('names the packages of the style in its error', () => {
    const e = new DicebearMissing('fun-emoji');
    assert.equal(installLine('fun-emoji'), 'npm install @dicebear/core@9 @dicebear/fun-emoji@9');
    assert.match(
      e.message,
      /fun-emoji is not installed on this server: npm install @dicebear\/core@9 @dicebear\/fun-emoji@9$/,
    );
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { type S3Handle, startS3 } from '../../../test/fixtures/files/s3.ts';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { emailHashes } from './seed.ts';

const TOKEN = testSecret('avatar-admin-');

describe('avatar uploads on the S3 blob backend', () => {
  let s3: S3Handle;
  let app: FastifyInstance;
  before(async () => {
    s3 = await startS3();
    app = await buildTestServer({
      overrides: { storage: s3.overrides, avatar: { upstream: 'none', adminToken: TOKEN } },
    });
  });
  after(async () => {
    await s3?.close();
    await app?.close();
  });

  it('stores, serves by MD5 and SHA-256, and deletes an avatar in the bucket', async () => {
    const { md5, sha256 } = emailHashes('s3user@example.com');
    const img = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#ff8800' } })
      .png()
      .toBuffer();
    const auth = { authorization: `Bearer ${TOKEN}` };
    const put = await app.inject({
      method: 'PUT',
      url: `/avatar/${sha256}`,
      payload: img,
      headers: { 'content-type': 'image/png', 'x-avatar-email': 's3user@example.com', ...auth },
    });
    assert.equal(put.statusCode, 201, put.body);
    for (const h of [md5, sha256]) {
      const r = await app.inject({ url: `/avatar/${h}?s=24&d=404` });
      assert.equal(r.statusCode, 200, h);
      assert.equal(r.headers['x-avatar-source'], 'upload');
      const m = await sharp(r.rawPayload).metadata();
      assert.deepEqual([m.width, m.height], [24, 24]);
    }
    const del = await app.inject({ method: 'DELETE', url: `/avatar/${md5}`, headers: auth });
    assert.equal(del.statusCode, 204);
    const gone = await app.inject({ url: `/avatar/${sha256}?d=404&v=after-delete` });
    assert.equal(gone.statusCode, 404);
  });
});

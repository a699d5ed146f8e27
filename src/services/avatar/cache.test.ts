import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';

describe('avatar caches', () => {
  it('serves rendered avatars from the disk cache after a restart', async () => {
    const dataDir = tempDir();
    const url = '/avatar/0bc83cb571cd1c50ba6f3e8a78ef1346?d=monsterid&s=120';
    const first = await buildTestServer({ overrides: { server: { dataDir }, avatar: { upstream: 'none' } } });
    const a = await first.inject({ url });
    await first.close();
    const second = await buildTestServer({
      overrides: { server: { dataDir }, avatar: { upstream: 'none' } },
    });
    try {
      const b = await second.inject({ url });
      assert.ok(b.rawPayload.equals(a.rawPayload));
      const metrics = await second.inject({ url: '/metrics' });
      assert.match(metrics.body, /devutil_avatar_cache_total\{layer="disk"\} 1/);
      assert.doesNotMatch(metrics.body, /devutil_avatar_cache_total\{layer="render"\}/);
      assert.match(metrics.body, /devutil_cache_lookups_total\{cache="avatar",result="disk_hit"\} 1/);
      assert.match(metrics.body, /devutil_cache_bytes\{cache="avatar",tier="memory"\} [1-9]/);
    } finally {
      await second.close();
    }
  });
});

// The kbps10s1m5m15m30m60m windows: averages over 10 s samples, partial history counted from zero.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateSampler } from './status.ts';

describe('relay rate sampler', () => {
  it('averages bytes over the six strelaysrv windows in kbit/s', () => {
    let total = 0;
    const s = new RateSampler(() => total);
    try {
      // 125,000 bytes every 10 s = 100 kbit/s, for 6 samples (one minute).
      for (let i = 0; i < 6; i++) {
        total += 125_000;
        s.sample();
      }
      const [k10, k1m, k5m, k15m, k30m, k60m] = s.kbps();
      assert.equal(k10, 100);
      assert.equal(k1m, 100);
      assert.equal(k5m, 20); // one busy minute averaged over five
      assert.equal(k15m, Math.floor((750_000 * 8) / 1000 / 900));
      assert.ok((k30m ?? -1) >= 0 && (k60m ?? -1) >= 0);
    } finally {
      s.stop();
    }
  });
});

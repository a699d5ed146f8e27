// The relay's config section: the env names the issue fixes, defaults, and refusals at start-up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../config.ts';

describe('telegram config', () => {
  it('reads DEVUTIL_TELEGRAM_* variables, including the upstream base and the former proxy setting', () => {
    const { config, warnings } = loadConfig({
      env: {
        DEVUTIL_TELEGRAM_API_BASE: 'http://127.0.0.1:8081/',
        DEVUTIL_TELEGRAM_PROXY_URL: 'http://ops:pw@127.0.0.1:3128',
        DEVUTIL_TELEGRAM_CHAT_RATE: '1/s',
        DEVUTIL_TELEGRAM_KEY_RATE_LIMIT: 'off',
        DEVUTIL_TELEGRAM_TIMEOUT_MS: '2500',
        DEVUTIL_TELEGRAM_MAX_BODY_BYTES: '32KiB',
        DEVUTIL_TELEGRAM_HONOUR_RETRY_AFTER: 'false',
      },
    });
    const t = config.telegram;
    assert.equal(t.apiBase, 'http://127.0.0.1:8081');
    // The relay's own proxy became the one for every upstream: the old name still sets it.
    assert.equal(config.egress.proxy, 'http://ops:pw@127.0.0.1:3128');
    assert.ok(
      warnings.includes('DEVUTIL_TELEGRAM_PROXY_URL is deprecated: use DEVUTIL_EGRESS_PROXY instead'),
    );
    assert.deepEqual(t.chatRate, { limit: 1, windowMs: 1000 });
    assert.equal(t.keyRateLimit.limit, 0);
    assert.equal(t.timeoutMs, 2500);
    assert.equal(t.maxBodyBytes, 32 * 1024);
    assert.equal(t.honourRetryAfter, false);
  });

  it('defaults to api.telegram.org, direct, and Telegram-like pacing', () => {
    const t = loadConfig({ env: {} }).config.telegram;
    assert.equal(t.apiBase, 'https://api.telegram.org');
    assert.equal(loadConfig({ env: {} }).config.egress.proxy, '');
    assert.deepEqual(t.botRate, { limit: 30, windowMs: 1000 });
    assert.deepEqual(t.chatRate, { limit: 5, windowMs: 5000 });
  });

  it('refuses bad values at start-up, naming each variable', () => {
    assert.throws(
      () =>
        loadConfig({
          env: {
            DEVUTIL_TELEGRAM_API_BASE: 'ftp://x',
            DEVUTIL_TELEGRAM_CHAT_RATE: 'fast',
            DEVUTIL_TELEGRAM_TIMEOUT_MS: '5',
          },
        }),
      (e: unknown) =>
        e instanceof ConfigError &&
        ['DEVUTIL_TELEGRAM_API_BASE', 'DEVUTIL_TELEGRAM_CHAT_RATE', 'DEVUTIL_TELEGRAM_TIMEOUT_MS'].every(
          (n) => e.message.includes(n),
        ),
    );
  });
});

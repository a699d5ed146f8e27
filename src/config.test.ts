import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../test/helpers/server.ts';
import { ConfigError, configReference, describeConfig, loadConfig } from './config.ts';

describe('config', () => {
  it('has working defaults with no input at all', () => {
    const { config } = loadConfig({});
    assert.equal(config.server.port, 8080);
    assert.equal(config.server.host, '0.0.0.0');
    assert.equal(config.server.dataDir, './data');
    assert.equal(config.server.publicUrl, 'http://localhost:8080');
    assert.equal(config.redis.url, '');
    assert.ok(Object.isFrozen(config.server));
  });

  it('gives every key exactly one env name and keeps the names other scripts rely on', () => {
    const names = configReference().map((r) => r.env);
    assert.equal(new Set(names).size, names.length, 'duplicate env names');
    for (const fixed of [
      'DEVUTIL_PORT',
      'DEVUTIL_HOST',
      'DEVUTIL_DATA_DIR',
      'DEVUTIL_REDIS_URL',
      'DEVUTIL_TRUST_PROXY',
      'DEVUTIL_PUBLIC_URL',
      'DEVUTIL_PROXY_HOST',
      'DEVUTIL_PLANTUML_HOST',
      'DEVUTIL_AVATAR_HOST',
      'DEVUTIL_LOG_LEVEL',
      'DEVUTIL_FILES_MAX_BYTES',
      'DEVUTIL_IMAGE_DIR',
      'DEVUTIL_TELEGRAM_API_BASE',
      'DEVUTIL_RELAY_PORT',
      'DEVUTIL_RELAY_ENABLED',
      'DEVUTIL_RELAY_STATUS_PORT',
    ]) {
      assert.ok(names.includes(fixed), `${fixed} missing`);
    }
    for (const n of names) assert.match(n, /^DEVUTIL_[A-Z0-9_]+$/);
  });

  it('documents every key in the README configuration reference (npm run docs:config)', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const missing = configReference().filter((r) => !readme.includes(`\`${r.env}\``));
    assert.deepEqual(
      missing.map((r) => r.env),
      [],
    );
  });

  it('applies flags over env over file over defaults', () => {
    const dir = tempDir();
    const file = join(dir, 'devutil.yaml');
    writeFileSync(
      file,
      'server:\n  port: 7000\n  host: 127.0.0.2\n  dataDir: /from/file\nlog:\n  level: debug\n',
    );
    const { config } = loadConfig({
      file,
      env: { DEVUTIL_PORT: '7001', DEVUTIL_HOST: '127.0.0.3' },
      flags: { 'server.port': '7002' },
    });
    assert.equal(config.server.port, 7002);
    assert.equal(config.server.host, '127.0.0.3');
    assert.equal(config.server.dataDir, '/from/file');
    assert.equal(config.log.level, 'debug');
  });

  it('reads JSON config files and DEVUTIL_CONFIG', () => {
    const file = join(tempDir(), 'c.json');
    writeFileSync(
      file,
      JSON.stringify({ files: { maxBytes: '1MiB' }, server: { trustProxy: ['loopback'] } }),
    );
    const { config } = loadConfig({ env: { DEVUTIL_CONFIG: file } });
    assert.equal(config.files.maxBytes, 1024 * 1024);
    assert.deepEqual(config.server.trustProxy, ['loopback']);
  });

  it('stops on DEVUTIL_PORT=abc with a message naming DEVUTIL_PORT', () => {
    assert.throws(
      () => loadConfig({ env: { DEVUTIL_PORT: 'abc' } }),
      (err: unknown) => err instanceof ConfigError && err.message.includes('DEVUTIL_PORT'),
    );
  });

  it('lists every bad variable in one message', () => {
    try {
      loadConfig({
        env: {
          DEVUTIL_PORT: '70000',
          DEVUTIL_LOG_LEVEL: 'loud',
          DEVUTIL_TRUST_PROXY: '10.0.0.0/99',
          DEVUTIL_PUBLIC_URL: 'ftp://x',
        },
      });
      assert.fail('expected a ConfigError');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 4);
      for (const n of ['DEVUTIL_PORT', 'DEVUTIL_LOG_LEVEL', 'DEVUTIL_TRUST_PROXY', 'DEVUTIL_PUBLIC_URL']) {
        assert.ok(err.message.includes(n), n);
      }
    }
  });

  it('refuses unknown keys in the file and unknown flags, and warns on unknown DEVUTIL_ variables', () => {
    const file = join(tempDir(), 'c.yaml');
    writeFileSync(file, 'server:\n  prot: 1\n');
    assert.throws(() => loadConfig({ file }), /unknown key "server.prot"/);
    assert.throws(() => loadConfig({ flags: { 'server.nope': '1' } }), /unknown option server.nope/);
    const { warnings } = loadConfig({ env: { DEVUTIL_PROTT: '1' } });
    assert.deepEqual(warnings, ['unknown environment variable DEVUTIL_PROTT ignored']);
  });

  it('reports a broken config file instead of ignoring it', () => {
    const file = join(tempDir(), 'c.yaml');
    writeFileSync(file, 'server: [unclosed\n');
    assert.throws(() => loadConfig({ file }), ConfigError);
    assert.throws(() => loadConfig({ file: '/nonexistent/devutil.yaml' }), /nonexistent/);
  });

  it('parses sizes, rates and booleans', () => {
    const { config } = loadConfig({
      env: { DEVUTIL_FILES_MAX_BYTES: '2G', DEVUTIL_IP_RATE_LIMIT: '5/10s', DEVUTIL_METRICS_ENABLED: 'no' },
    });
    assert.equal(config.files.maxBytes, 2 * 1024 ** 3);
    assert.deepEqual(config.ip.rateLimit, { limit: 5, windowMs: 10_000 });
    assert.equal(config.metrics.enabled, false);
    assert.throws(() => loadConfig({ env: { DEVUTIL_IP_RATE_LIMIT: 'lots' } }), /DEVUTIL_IP_RATE_LIMIT/);
  });

  it('masks secrets in the printed config', () => {
    const { config } = loadConfig({
      env: { DEVUTIL_REDIS_URL: 'redis://:hunter2@127.0.0.1:6379', DEVUTIL_METRICS_TOKEN: 's3cret' },
    });
    const text = JSON.stringify(describeConfig(config));
    assert.ok(!text.includes('hunter2'));
    assert.ok(!text.includes('s3cret'));
    assert.ok(text.includes('********'));
  });
});

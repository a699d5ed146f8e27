import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify as toYaml } from 'yaml';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';
import { tempDir } from '../test/helpers/server.ts';
import { ConfigError, configReference, describeConfig, loadConfig } from './config.ts';

describe('config', () => {
  it('has working defaults with no input at all', () => {
    const { config } = loadConfig({});
    assert.equal(config.server.port, 8080);
    assert.equal(config.server.host, '::');
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
      'DEVUTIL_DIAGRAMS_HOST',
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
    // Tracing takes OpenTelemetry's own names (OTEL_EXPORTER_OTLP_ENDPOINT...), as every OTel service does.
    for (const r of configReference())
      assert.match(r.env, r.section === 'tracing' ? /^OTEL_[A-Z0-9_]+$/ : /^DEVUTIL_[A-Z0-9_]+$/);
  });

  it('documents every key in the configuration reference, docs/configuration.md (npm run docs:config)', () => {
    const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const missing = configReference().filter((r) => !page.includes(`\`${r.env}\``));
    assert.deepEqual(
      missing.map((r) => r.env),
      [],
    );
  });

  it('keeps the configuration table in docs/configuration.md as generated on any machine (no core counts)', () => {
    // The generator runs in a child that believes the machine has 77 cores.
    const fake = [
      'import os from "node:os";',
      'import { syncBuiltinESMExports } from "node:module";',
      'os.availableParallelism = () => 77;',
      'syncBuiltinESMExports();',
    ].join('');
    const print =
      'const m = await import("./scripts/config-reference.ts"); process.stdout.write(m.referenceTable());';
    const r = spawnSync(
      process.execPath,
      [
        ...TS_EXEC_ARGV,
        '--import',
        `data:text/javascript,${encodeURIComponent(fake)}`,
        '--input-type=module',
        '-e',
        print,
      ],
      { cwd: new URL('..', import.meta.url).pathname, encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const start = '<!-- config-reference:start -->\n';
    const table = page.slice(
      page.indexOf(start) + start.length,
      page.indexOf('\n<!-- config-reference:end -->'),
    );
    assert.equal(r.stdout, table, 'docs/configuration.md table differs from `npm run docs:config` output');
    assert.doesNotMatch(r.stdout, /\b77\b/);
    assert.match(r.stdout, /DEVUTIL_IMAGE_CONCURRENCY.*\| one per core \|/);
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

  // These URLs are shown in copyable commands and written by setup.sh into files a shell reads.
  const shellHostile: [string, string][] = [
    ['DEVUTIL_PUBLIC_URL', "https://dev.example.com/it's"],
    ['DEVUTIL_PROXY_PUBLIC_URL', "https://proxy.example.com/';touch /tmp/x;'"],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/$(id)'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/`id`'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a;b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a|b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a&b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a"b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a\\b'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/a\nb'],
    ['DEVUTIL_PROXY_PUBLIC_URL', 'https://proxy.example.com/*'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion the check must refuse
    ['DEVUTIL_AVATAR_PUBLIC_URL', 'https://avatar.example.com/${HOME}'],
    ['DEVUTIL_IP_V4_URL', 'https://v4.example.com/<x>'],
  ];
  for (const [name, value] of shellHostile)
    it(`refuses ${name}=${JSON.stringify(value)} (quotes, spaces or shell metacharacters), naming it`, () => {
      assert.throws(
        () => loadConfig({ env: { [name]: value } }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.problems.length === 1 &&
          err.problems[0]!.startsWith(
            `${name}: expected a URL without quotes, spaces or shell metacharacters`,
          ),
      );
    });

  for (const [name, value] of [
    ['DEVUTIL_PROXY_HOST', "proxy.example.com'x"],
    ['DEVUTIL_PROXY_HOST', 'proxy.example.com/x'],
    ['DEVUTIL_PROXY_HOST', 'proxy example.com'],
    ['DEVUTIL_AVATAR_HOST', 'a.example.com;id'],
    ['DEVUTIL_RELAY_EXT_ADDRESS', 'relay.example.com:22067;id'],
    ['DEVUTIL_RELAY_EXT_ADDRESS', '$(id)'],
  ] as const)
    it(`refuses ${name}=${JSON.stringify(value)}: not a host name with an optional port`, () => {
      assert.throws(
        () => loadConfig({ env: { [name]: value } }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(`${name}: expected`),
      );
    });

  it('takes URLs and hosts as they usually are: a path, a port, an IPv6 host, a percent-encoded quote', () => {
    const { config } = loadConfig({
      env: {
        DEVUTIL_PUBLIC_URL: 'http://[2001:db8::1]:8080/devutil',
        DEVUTIL_PROXY_PUBLIC_URL: 'https://proxy.example.com/it%27s',
        DEVUTIL_PROXY_HOST: 'proxy.example.com:8443',
        DEVUTIL_AVATAR_HOST: '[::1]:8080',
        DEVUTIL_RELAY_EXT_ADDRESS: '2001:db8::1',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/x?tenant=a&b=c',
      },
    });
    assert.equal(config.server.publicUrl, 'http://[2001:db8::1]:8080/devutil');
    assert.equal(config.proxy.host, 'proxy.example.com:8443');
    assert.equal(config.relay.extAddress, '2001:db8::1');
  });

  it('names a secret variable that is wrong without quoting its value', () => {
    const secret = 'not a valid proxy secret!';
    try {
      loadConfig({ env: { DEVUTIL_PROXY_SECRET: secret, DEVUTIL_TELEGRAM_PROXY_URL: 'ftp://u:p4ssw0rd@x' } });
      assert.fail('expected a ConfigError');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.match(
        err.message,
        /DEVUTIL_PROXY_SECRET: expected 8\+ characters of \[A-Za-z0-9_-\] \(the value is secret: not shown\)/,
      );
      assert.match(
        err.message,
        /DEVUTIL_TELEGRAM_PROXY_URL: expected an http:\/\/ or https:\/\/ proxy \(ftp is not supported\) \(the value is secret: not shown\)/,
      );
      assert.ok(!err.message.includes(secret) && !err.message.includes('p4ssw0rd'), err.message);
    }
  });

  it('refuses unknown keys in the file and unknown flags, and warns on unknown DEVUTIL_ variables', () => {
    const file = join(tempDir(), 'c.yaml');
    writeFileSync(file, 'server:\n  prot: 1\n');
    assert.throws(() => loadConfig({ file }), /unknown key "server.prot"/);
    assert.throws(() => loadConfig({ flags: { 'server.nope': '1' } }), /unknown option server.nope/);
    const { warnings } = loadConfig({ env: { DEVUTIL_PROTT: '1' } });
    assert.deepEqual(warnings, [
      'unknown environment variable DEVUTIL_PROTT ignored (did you mean DEVUTIL_PORT?)',
    ]);
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

  it('refuses units, windows and file keys that name Object.prototype members', () => {
    for (const env of [
      { DEVUTIL_FILES_MAX_BYTES: '5constructor' },
      { DEVUTIL_FILES_MAX_BYTES: '5__proto__' },
      { DEVUTIL_IP_RATE_LIMIT: '30/constructor' },
      { DEVUTIL_IP_RATE_LIMIT: '30/tostring' },
    ])
      assert.throws(() => loadConfig({ env }), ConfigError, JSON.stringify(env));
    const file = join(tempDir(), 'c.yaml');
    writeFileSync(file, 'server:\n  constructor: 1\n');
    assert.throws(() => loadConfig({ file }), /unknown key "server.constructor"/);
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

  it('takes every time setting as 30s, 5m, 1500ms, 2h or a plain number in the key unit', () => {
    const load = (env: Record<string, string>) => loadConfig({ env }).config;
    assert.equal(load({ DEVUTIL_SHUTDOWN_TIMEOUT_MS: '30s' }).server.shutdownTimeoutMs, 30_000);
    assert.equal(load({ DEVUTIL_SHUTDOWN_TIMEOUT_MS: '1500' }).server.shutdownTimeoutMs, 1500);
    assert.equal(load({ DEVUTIL_PROXY_BODY_TIMEOUT_MS: '5m' }).proxy.bodyTimeoutMs, 300_000);
    assert.equal(load({ DEVUTIL_TELEGRAM_TIMEOUT_MS: '1500ms' }).telegram.timeoutMs, 1500);
    assert.equal(load({ DEVUTIL_REQUEST_TIMEOUT_MS: '2h' }).server.requestTimeoutMs, 7_200_000);
    // Keys ending in Sec keep counting seconds, whichever way they are written.
    assert.equal(load({ DEVUTIL_FILES_MAX_AGE_SEC: '86400' }).files.maxAgeSec, 86_400);
    assert.equal(load({ DEVUTIL_FILES_MAX_AGE_SEC: '7d' }).files.maxAgeSec, 604_800);
    assert.equal(load({ DEVUTIL_AVATAR_MAX_AGE_SEC: '5m' }).avatar.maxAgeSec, 300);
    // The relay's strelaysrv-style timeouts keep Go durations and plain seconds.
    assert.equal(load({ DEVUTIL_RELAY_PING_INTERVAL: '1m30s' }).relay.pingInterval, 90_000);
    assert.equal(load({ DEVUTIL_RELAY_PING_INTERVAL: '90' }).relay.pingInterval, 90_000);
    const refused: [string, string, RegExp][] = [
      ['DEVUTIL_SHUTDOWN_TIMEOUT_MS', 'soon', /expected a duration like 30s/],
      ['DEVUTIL_SHUTDOWN_TIMEOUT_MS', '-5s', /expected a duration/],
      ['DEVUTIL_HEADERS_TIMEOUT_MS', '500ms', /between 1s and unlimited/],
      ['DEVUTIL_FILES_MAX_AGE_SEC', '1500ms', /whole number of seconds/],
      ['DEVUTIL_IMAGE_RETRY_AFTER_SEC', '0', /between 1s/],
    ];
    for (const [name, value, why] of refused) {
      assert.throws(
        () => loadConfig({ env: { [name]: value } }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(name) && why.test(err.message),
        `${name}=${value}`,
      );
    }
  });

  it('configures the shared blob store in storage and still reads the former files.* names', () => {
    const fresh = loadConfig({ env: { DEVUTIL_STORAGE_BACKEND: 's3', DEVUTIL_STORAGE_S3_BUCKET: 'b' } });
    assert.equal(fresh.config.storage.backend, 's3');
    assert.equal(fresh.config.storage.s3Bucket, 'b');
    assert.deepEqual(fresh.warnings, []);

    const old = loadConfig({
      env: { DEVUTIL_FILES_BACKEND: 's3', DEVUTIL_STORAGE_S3_BUCKET: 'b', DEVUTIL_FILES_S3_TIMEOUT_MS: '2s' },
    });
    assert.equal(old.config.storage.backend, 's3');
    assert.equal(old.config.storage.s3TimeoutMs, 2000);
    assert.deepEqual(old.warnings, [
      'DEVUTIL_FILES_BACKEND is deprecated: use DEVUTIL_STORAGE_BACKEND instead',
      'DEVUTIL_FILES_S3_TIMEOUT_MS is deprecated: use DEVUTIL_STORAGE_S3_TIMEOUT_MS instead',
    ]);

    const file = join(tempDir(), 'old.yaml');
    writeFileSync(file, 'files:\n  maxBytes: 1MiB\n  s3Bucket: from-file\n');
    const fromFile = loadConfig({ file, flags: { 'files.s3Region': 'eu-west-1' } });
    assert.equal(fromFile.config.storage.s3Bucket, 'from-file');
    assert.equal(fromFile.config.storage.s3Region, 'eu-west-1');
    assert.equal(fromFile.config.files.maxBytes, 1024 ** 2);
    assert.deepEqual(fromFile.warnings, [
      `${file}: files.s3Bucket is deprecated: use storage.s3Bucket instead`,
      '--files.s3Region is deprecated: use storage.s3Region instead',
    ]);

    // At one level the new name wins; a higher level wins whatever its name.
    const both = loadConfig({
      file,
      env: {
        DEVUTIL_STORAGE_S3_REGION: 'new',
        DEVUTIL_FILES_S3_REGION: 'old',
        DEVUTIL_FILES_S3_BUCKET: 'env',
      },
    });
    assert.equal(both.config.storage.s3Region, 'new');
    assert.equal(both.config.storage.s3Bucket, 'env');
  });

  it('reads the diagrams section under its former name plantuml, with a warning naming the new key', () => {
    const old = loadConfig({ env: { DEVUTIL_PLANTUML_TIMEOUT_MS: '3s', DEVUTIL_PLANTUML_WORKERS: '3' } });
    assert.equal(old.config.diagrams.timeoutMs, 3000);
    assert.equal(old.config.diagrams.workers, 3);
    assert.deepEqual(old.warnings, [
      'DEVUTIL_PLANTUML_WORKERS is deprecated: use DEVUTIL_DIAGRAMS_WORKERS instead',
      'DEVUTIL_PLANTUML_TIMEOUT_MS is deprecated: use DEVUTIL_DIAGRAMS_TIMEOUT_MS instead',
    ]);
    // The new name wins at the same level; a file's plantuml section is still read.
    const both = loadConfig({
      env: { DEVUTIL_DIAGRAMS_TIMEOUT_MS: '4s', DEVUTIL_PLANTUML_TIMEOUT_MS: '3s' },
    });
    assert.equal(both.config.diagrams.timeoutMs, 4000);
    const file = join(tempDir(), 'old-diagrams.yaml');
    writeFileSync(file, 'plantuml:\n  queueSize: 7\n');
    const fromFile = loadConfig({ file });
    assert.equal(fromFile.config.diagrams.queueSize, 7);
    assert.deepEqual(fromFile.warnings, [
      `${file}: plantuml.queueSize is deprecated: use diagrams.queueSize instead`,
    ]);
  });

  it('prints a configuration that loads back equal, as JSON and as YAML', () => {
    const { config } = loadConfig({
      env: {
        DEVUTIL_TRUST_PROXY: 'loopback,10.0.0.0/8',
        DEVUTIL_BODY_LIMIT: '1500',
        DEVUTIL_SHUTDOWN_TIMEOUT_MS: '1500',
        DEVUTIL_FILES_MAX_BYTES: '3GiB',
        DEVUTIL_FILES_MAX_AGE_SEC: '90',
        DEVUTIL_IP_RATE_LIMIT: '5/10s',
        DEVUTIL_TELEGRAM_CHAT_RATE: '7/90s',
        DEVUTIL_STORAGE_S3_REGION: 'auto',
        DEVUTIL_RELAY_PING_INTERVAL: '1m30s',
        DEVUTIL_RELAY_GLOBAL_RATE: '10MiB',
      },
    });
    const printed = describeConfig(config);
    assert.equal(printed['ip']?.['rateLimit'], '5/10s');
    assert.equal(printed['files']?.['maxBytes'], '3GiB');
    assert.equal(printed['server']?.['shutdownTimeoutMs'], '1500ms');
    assert.equal(printed['relay']?.['pingInterval'], '90s');
    const dir = tempDir();
    for (const [name, text] of [
      ['cfg.json', JSON.stringify(printed, null, 2)],
      ['cfg.yaml', toYaml(printed)],
    ] as const) {
      writeFileSync(join(dir, name), text);
      const back = loadConfig({ file: join(dir, name) });
      assert.deepEqual(back.config, config, name);
      assert.deepEqual(back.warnings, [], name);
    }
  });

  it('refuses the mask of a printed secret instead of taking it as the secret', () => {
    const secretEnv = { DEVUTIL_METRICS_TOKEN: 's3cret-token' };
    const { config } = loadConfig({ env: secretEnv });
    const file = join(tempDir(), 'cfg.json');
    writeFileSync(file, JSON.stringify(describeConfig(config)));
    assert.throws(
      () => loadConfig({ file }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.problems.length === 1 &&
        /metrics\.token: \*{8} stands for a secret/.test(err.message),
    );
    // With the secret given again (its variable beats the file) the printed file loads.
    assert.deepEqual(loadConfig({ file, env: secretEnv }).config, config);
  });
});

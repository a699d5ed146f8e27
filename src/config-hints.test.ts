// The configuration's help for people: "did you mean" for a mistyped DEVUTIL_ variable, and
// settings wrong only together (S3 without a bucket) reported as one line with the rest, no stack.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, nearest } from './config.ts';

const ROOT = new URL('..', import.meta.url).pathname;

describe('configuration hints', { timeout: 60_000 }, () => {
  const typos: [string, string | null][] = [
    ['DEVUTIL_AVATAR_UPSTRAEM', 'DEVUTIL_AVATAR_UPSTREAM'],
    ['DEVUTIL_LOG_LEVL', 'DEVUTIL_LOG_LEVEL'],
    ['DEVUTIL_PORTT', 'DEVUTIL_PORT'],
    ['DEVUTIL_STORAGE_S3_BUKCET', 'DEVUTIL_STORAGE_S3_BUCKET'],
    ['DEVUTIL_IP_RATELIMIT', 'DEVUTIL_IP_RATE_LIMIT'],
    ['DEVUTIL_SOMETHING_ELSE_ENTIRELY', null],
    ['DEVUTIL_X', null],
  ];
  for (const [typo, want] of typos)
    it(`${typo} -> ${want ?? 'no suggestion'}`, () => {
      const { warnings } = loadConfig({ env: { [typo]: '1' } });
      const line = warnings.find((w) => w.includes(typo));
      assert.ok(line, 'the unknown variable is warned about');
      if (want) assert.ok(line.endsWith(`(did you mean ${want}?)`), line);
      else assert.doesNotMatch(line, /did you mean/);
    });

  it('suggests only names close enough to be a typo', () => {
    assert.equal(nearest('DEVUTIL_PORT', ['DEVUTIL_DATA_DIR']), null);
    assert.equal(nearest('DEVUTIL_AB', ['DEVUTIL_CD']), null, 'short names need a closer match');
    assert.equal(nearest('DEVUTIL_HOTS', ['DEVUTIL_HOST', 'DEVUTIL_PORT']), 'DEVUTIL_HOST');
  });

  it('lists an S3 backend without a bucket as one problem beside the others', () => {
    let err: unknown;
    try {
      loadConfig({ env: { DEVUTIL_STORAGE_BACKEND: 's3', DEVUTIL_PORT: 'abc' } });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ConfigError);
    assert.deepEqual(err.problems, [
      'DEVUTIL_PORT: expected an integer, got "abc"',
      'DEVUTIL_STORAGE_S3_BUCKET: required when DEVUTIL_STORAGE_BACKEND=s3 (the bucket to store blobs in)',
    ]);
    assert.doesNotThrow(() =>
      loadConfig({ env: { DEVUTIL_STORAGE_BACKEND: 's3', DEVUTIL_STORAGE_S3_BUCKET: 'b' } }),
    );
  });

  it('stops `devutil serve` with that line and exit code 78, no stack', () => {
    const r = spawnSync(process.execPath, ['bin/devutil.js', 'serve'], {
      cwd: ROOT,
      env: {
        PATH: process.env['PATH'],
        HOME: process.env['HOME'],
        DEVUTIL_STORAGE_BACKEND: 's3',
        DEVUTIL_PORT: '0',
      },
      encoding: 'utf8',
      timeout: 50_000,
    });
    assert.equal(r.status, 78, r.stderr);
    assert.match(r.stderr, /DEVUTIL_STORAGE_S3_BUCKET: required when DEVUTIL_STORAGE_BACKEND=s3/);
    assert.doesNotMatch(r.stderr, /\n\s+at |s3\.ts|Error:/);
    assert.equal(r.stdout, '');
  });
});

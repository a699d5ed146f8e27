// The README's `npx devutil --help` works in a checkout after `npm install`: npx finds the
// project's own bin (package.json "bin"), with nothing installed globally.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;

describe('the devutil command from a checkout', { timeout: 120_000 }, () => {
  it('is documented as npx devutil in the README', () => {
    assert.match(readFileSync(`${ROOT}README.md`, 'utf8'), /npx devutil --help/);
  });

  for (const args of [['--help'], ['config', '--help']])
    it(`npx devutil ${args.join(' ')} prints the usage and exits 0`, () => {
      const r = spawnSync('npx', ['--offline', '--no-install', 'devutil', ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 100_000,
        env: { ...process.env, npm_config_update_notifier: 'false' },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /Usage:\n\s+devutil \[serve\]/);
    });
});

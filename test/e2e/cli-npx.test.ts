// The README's `npx devutil --help` works in a checkout after `npm install`: npx finds the
// project's own bin (package.json "bin"), with nothing installed globally.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;
const USAGE = /Usage:\n\s+devutil \[serve\]/;

describe('the devutil command from a checkout', { timeout: 120_000 }, () => {
  it('is documented as npx devutil in the README', () => {
    assert.match(readFileSync(`${ROOT}README.md`, 'utf8'), /npx devutil --help/);
  });

  it('npx devutil --help prints the usage and exits 0', () => {
    const r = spawnSync('npx', ['--offline', '--no-install', 'devutil', '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 100_000,
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, USAGE);
  });

  // The bin npx runs (above) with a subcommand's arguments: npm's hand-over of argv is npm's own,
  // so the bin is run directly here (an npx start costs a second or two of CPU on each leg).
  it('devutil config --help prints the usage and exits 0', () => {
    const r = spawnSync(process.execPath, [`${ROOT}bin/devutil.js`, 'config', '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 100_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, USAGE);
  });
});

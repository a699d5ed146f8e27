// The systemd unit and the image start the server with the same glibc allocator settings
// (docs/operations.md, "Memory"): dropping them from one of the two is a heavier idle server there.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url);
const WANTED = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

function settings(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/\b(MALLOC_[A-Z_]+)=(\S+?)(?=\s|\\|$)/gm)) out[m[1]!] = m[2]!;
  return out;
}

describe('glibc allocator settings in deploy/', { timeout: 30_000 }, () => {
  it('devutil.service sets them', () => {
    const unit = readFileSync(new URL('deploy/devutil.service', ROOT), 'utf8');
    const env = unit
      .split('\n')
      .filter((l) => l.startsWith('Environment='))
      .join('\n');
    assert.deepEqual(settings(env), WANTED);
  });

  it('the Dockerfile sets the same', () => {
    const file = readFileSync(new URL('deploy/Dockerfile', ROOT), 'utf8');
    const env = file.slice(file.lastIndexOf('\nENV '), file.indexOf('\nUSER ', file.lastIndexOf('\nENV ')));
    assert.deepEqual(settings(env), WANTED);
  });
});

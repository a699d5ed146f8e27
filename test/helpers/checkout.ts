// This checkout as a clean clone would have it: tracked and new files, nothing git ignores (no
// node_modules, no web/dist/, no test output). The production install test and bench/install.ts
// install such a copy.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

export function copyCheckout(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(ROOT, f))) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(to, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(to, f));
  }
}

// Whether an optional engine package is installed, and its version (for cache keys and /health),
// found without loading it: the package's entry is resolved and its package.json read beside it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const known = new Map<string, string | null>();

export function packageVersion(pkg: string): string | null {
  if (known.has(pkg)) return known.get(pkg) ?? null;
  let version: string | null = null;
  try {
    let entry: string;
    try {
      entry = import.meta.resolve(pkg);
    } catch {
      entry = import.meta.resolve(`${pkg}/package.json`); // a package with no main entry (svgbob-wasm)
    }
    let dir = dirname(fileURLToPath(entry));
    for (let i = 0; i < 6 && version === null; i++, dir = dirname(dir)) {
      try {
        const p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (p.name === pkg) version = p.version ?? '0';
      } catch {}
    }
  } catch {}
  known.set(pkg, version);
  return version;
}

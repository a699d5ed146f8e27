// The browser pools' page scripts: one standalone bundle each out of a large npm package (Mermaid's
// 3.5 MB of a 150 MiB install, bpmn-js's viewer). The page build (web/build.ts) copies each into
// web/dist/vendor/ with its version, so a production install, which leaves those packages out
// (src/infra/config/extras.ts), still draws with them; where the package is installed, its own file is used.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST_DIR } from '../../../../web/dist.ts';
import { packageVersion } from '../../../infra/config/extras.ts';

export const BUNDLES = {
  mermaid: { pkg: 'mermaid', file: 'dist/mermaid.min.js' },
  bpmn: { pkg: 'bpmn-js', file: 'dist/bpmn-viewer.production.min.js' },
} as const;

export type BundleName = keyof typeof BUNDLES;

export interface Bundle {
  path: string;
  /** The package's version (cache keys and ETags change with it). */
  version: string;
}

export const VENDOR_DIR = join(DIST_DIR, 'vendor');

function installed(name: BundleName): Bundle | null {
  const b = BUNDLES[name];
  try {
    const path = fileURLToPath(import.meta.resolve(`${b.pkg}/${b.file}`));
    const version = packageVersion(b.pkg);
    return version && existsSync(path) ? { path, version } : null;
  } catch {
    return null;
  }
}

/** The bundle to load into the pages: the installed package's, else the copy the page build made. */
export function browserBundle(name: BundleName, dir = VENDOR_DIR): Bundle | null {
  const own = installed(name);
  if (own) return own;
  try {
    const versions = JSON.parse(readFileSync(join(dir, 'versions.json'), 'utf8')) as Record<string, unknown>;
    const version = versions[name];
    const path = join(dir, `${name}.js`);
    if (typeof version === 'string' && existsSync(path)) return { path, version };
  } catch {
    // no copy: the page build ran where the package was missing, or never
  }
  return null;
}

/** Copies the installed bundles into `dir` (the page build), with their versions; returns those. */
export function vendorBundles(dir = VENDOR_DIR): Record<string, string> {
  mkdirSync(dir, { recursive: true });
  const versions: Record<string, string> = {};
  for (const name of Object.keys(BUNDLES) as BundleName[]) {
    const b = installed(name);
    if (!b) continue;
    copyFileSync(b.path, join(dir, `${name}.js`));
    versions[name] = b.version;
  }
  writeFileSync(join(dir, 'versions.json'), `${JSON.stringify(versions, null, 2)}\n`);
  return versions;
}

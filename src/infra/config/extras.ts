// The optional extras: heavy npm packages that only some deployments use. They are development
// dependencies and optional peer dependencies in package.json, so `npm install` (a checkout, CI, the
// container image) has them all while the production install (`npm ci --omit=dev`) carries none.
// One table here says which feature needs which packages; the install line an answer or the start-up
// log names is built from package.json's own ranges (docs/deployment.md, "Lean install").
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Extra {
  /** What the feature is, as a log line or an answer names it. */
  feature: string;
  packages: readonly string[];
  /** Run after the install (a named `npm install` runs no prepare step). */
  after?: string;
}

const OTEL = [
  'api',
  'core',
  'resources',
  'sdk-trace',
  'exporter-trace-otlp-http',
  'exporter-trace-otlp-proto',
];

export const EXTRAS = {
  ipdb: {
    feature: 'IP country and network databases (?details=1)',
    packages: ['@ip-location-db/asn', '@ip-location-db/geo-whois-asn-country-mmdb'],
    // Each ships its tables twice; this drops the copies geo.ts does not read.
    after: 'node scripts/extras.js prune',
  },
  d2: { feature: 'D2 diagrams', packages: ['@terrastruct/d2'] },
  vega: { feature: 'Vega and Vega-Lite diagrams', packages: ['vega', 'vega-lite'] },
  dbml: { feature: 'DBML diagrams', packages: ['@softwaretechnik/dbml-renderer'] },
  mermaid: { feature: "Mermaid's own parser (stricter checks of Mermaid sources)", packages: ['mermaid'] },
  tracing: { feature: 'OpenTelemetry traces', packages: OTEL.map((p) => `@opentelemetry/${p}`) },
} as const satisfies Record<string, Extra>;

export type ExtraName = keyof typeof EXTRAS;

const ROOT_PACKAGE = fileURLToPath(new URL('../../../package.json', import.meta.url));
let ranges: Record<string, string> | undefined;

type Deps = Record<string, Record<string, string> | undefined>;

/** package.json's range for a package (an extra's peerDependencies entry, or an optional dependency's). */
function rangeOf(pkg: string): string {
  if (!ranges) {
    const p = JSON.parse(readFileSync(ROOT_PACKAGE, 'utf8')) as Deps;
    ranges = { ...p['dependencies'], ...p['optionalDependencies'], ...p['peerDependencies'] };
  }
  const r = ranges[pkg];
  return r ? `${pkg}@${r}` : pkg;
}

/**
 * What an operator runs in a production install to add `packages`: --save-prod installs them
 * although package.json lists them as development dependencies, --no-save leaves package.json and
 * the lock as they are (a later `npm ci` drops them again: run the line after it).
 */
export function installLine(packages: readonly string[]): string {
  return `npm install --omit=dev --no-save --save-prod ${packages.map(rangeOf).join(' ')}`;
}

/** The line that installs every package of `name` that is missing. */
export function extraInstallLine(name: ExtraName): string {
  const e: Extra = EXTRAS[name];
  const missing = e.packages.filter((p) => packageVersion(p) === null);
  const line = installLine(missing.length ? missing : e.packages);
  return e.after ? `${line} && ${e.after}` : line;
}

/** "<feature> needs the npm package(s) ... : <install line>", for answers and errors. */
export function missingMessage(name: ExtraName): string {
  const e: Extra = EXTRAS[name];
  const what = e.packages.length > 1 ? 'packages are' : 'package is';
  return `${e.feature}: the optional npm ${what} not installed on this server (${extraInstallLine(name)})`;
}

/** A feature was asked for whose extra is not installed: answered 503 with the install line. */
export class ExtraMissing extends Error {
  readonly extra: ExtraName;
  constructor(extra: ExtraName, options?: ErrorOptions) {
    super(missingMessage(extra), options);
    this.name = 'ExtraMissing';
    this.extra = extra;
  }
}

/** The extra a package belongs to, if it is one's. */
export function extraOf(pkg: string): ExtraName | undefined {
  return (Object.keys(EXTRAS) as ExtraName[]).find((n) =>
    (EXTRAS[n].packages as readonly string[]).includes(pkg),
  );
}

/** Why `pkg` cannot be used here: its extra's message, or the install line of an optional dependency. */
export function missingPackageMessage(pkg: string): string {
  const extra = extraOf(pkg);
  if (extra) return missingMessage(extra);
  return `the npm package ${pkg} is not installed on this server (${installLine([pkg])})`;
}

/** The extras of which a package is missing, for the one start-up line that lists them. */
export function missingExtras(): ExtraName[] {
  return (Object.keys(EXTRAS) as ExtraName[]).filter((n) =>
    EXTRAS[n].packages.some((p) => packageVersion(p) === null),
  );
}

const known = new Map<string, string | null>();

/**
 * An installed package's version (for cache keys, /health and the checks above), found without
 * loading it: the package's entry is resolved and its package.json read beside it; null when absent.
 */
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

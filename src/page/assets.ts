// The page's hashed assets, read from web/dist/ as the build made them (web/build.ts: `npm install`
// in a development checkout, the build stage of an image). The server never builds them: a
// production install has no bundler. Missing, the page is served without its script and style and
// the log says how to build them; built from older sources, they are served and the log says so.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DIST_DIR, type Manifest, sourceHash } from '../../web/dist.ts';
import { type Coding, precompress } from './encoding.ts';

export interface Asset {
  body: Buffer;
  type: string;
  /** The same bytes brotli- and gzip-compressed, when that saves anything (SVG icons, CSS, JS). */
  coded: Partial<Record<Coding, Buffer>>;
}

export interface Assets {
  /** Logical name (app.js, app.css, favicon.svg) -> public path under /assets/. */
  paths: Record<keyof Manifest['files'], string>;
  byName: Map<string, Asset>;
  /** Built from other sources than the ones beside them (a checkout whose web/src/ changed since). */
  stale: boolean;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function typeOf(name: string): string {
  const ext = name.slice(name.lastIndexOf('.'));
  return (Object.hasOwn(TYPES, ext) ? TYPES[ext] : undefined) ?? 'application/octet-stream';
}

/** Hashed file name -> its brotli and gzip codings, as the build wrote them beside it. */
type Codings = Map<string, Record<Coding, Buffer>>;

/** What web/dist/ holds: the manifest, each file's bytes and its precompressed codings. */
interface Dist {
  manifest: Manifest;
  contents: Map<string, Buffer>;
  codings: Codings;
}

/** Reads web/dist/ (or another directory); throws when its manifest or a file it names is missing. */
export function readDist(dir = DIST_DIR): Dist {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch (err) {
    throw new Error(
      'the page assets are not built (no web/dist/manifest.json): run `npm run build:web` where the ' +
        'development dependencies are installed (npm install does it)',
      { cause: err },
    );
  }
  const contents = new Map<string, Buffer>();
  const codings: Codings = new Map();
  for (const name of Object.values(manifest.files)) {
    contents.set(name, readFileSync(join(dir, name)));
    const br = tryRead(join(dir, `${name}.br`));
    const gzip = tryRead(join(dir, `${name}.gz`));
    if (br && gzip) codings.set(name, { br, gzip });
  }
  return { manifest, contents, codings };
}

function tryRead(p: string): Buffer | null {
  try {
    return readFileSync(p);
  } catch {
    return null;
  }
}

function toAssets(dist: Dist, stale: boolean): Assets {
  const byName = new Map<string, Asset>();
  for (const [name, body] of dist.contents) {
    const all = dist.codings.get(name) ?? precompress(body);
    const coded: Asset['coded'] = {};
    for (const c of ['br', 'gzip'] as const) if (all[c].length < body.length) coded[c] = all[c];
    byName.set(name, { body, type: typeOf(name), coded });
  }
  const f = dist.manifest.files;
  return {
    paths: {
      'app.js': `/assets/${f['app.js']}`,
      'app.css': `/assets/${f['app.css']}`,
      'favicon.svg': `/assets/${f['favicon.svg']}`,
    },
    byName,
    stale,
  };
}

let loading: Assets | null = null;

/** The assets, read once per process (every test server shares them); throws when not built. */
export function loadAssets(logger: Logger): Assets {
  if (loading) return loading;
  const dist = readDist();
  // The sources are beside the build in every install: a mismatch means web/src changed since.
  const stale = dist.manifest.sourceHash !== sourceHash();
  if (stale)
    logger.warn(
      'the page assets in web/dist/ were built from other sources than web/src/: run `npm run build:web`',
    );
  loading = toAssets(dist, stale);
  return loading;
}

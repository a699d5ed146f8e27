// The page's hashed assets: read from web/dist/ when it was built from the current sources (by the
// `prepare` script of npm install), else built in memory with esbuild. One load per process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type Built, buildAssets, DIST_DIR, type Manifest, sourceHash } from '../../web/build.ts';
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
  /** Where they came from, for the start-up log. */
  origin: 'dist' | 'built';
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

/** Hashed file name -> its brotli and gzip codings, as `npm install` wrote them beside it. */
type Codings = Map<string, Record<Coding, Buffer>>;

function readDist(): { built: Built; codings: Codings } | null {
  try {
    const manifest = JSON.parse(readFileSync(join(DIST_DIR, 'manifest.json'), 'utf8')) as Manifest;
    if (manifest.sourceHash !== sourceHash()) return null;
    const contents = new Map<string, Buffer>();
    const codings: Codings = new Map();
    for (const name of Object.values(manifest.files)) {
      contents.set(name, readFileSync(join(DIST_DIR, name)));
      const br = tryRead(join(DIST_DIR, `${name}.br`));
      const gzip = tryRead(join(DIST_DIR, `${name}.gz`));
      if (br && gzip) codings.set(name, { br, gzip });
    }
    return { built: { manifest, contents }, codings };
  } catch {
    return null;
  }
}

function tryRead(p: string): Buffer | null {
  try {
    return readFileSync(p);
  } catch {
    return null;
  }
}

function toAssets(built: Built, origin: Assets['origin'], codings: Codings = new Map()): Assets {
  const byName = new Map<string, Asset>();
  for (const [name, body] of built.contents) {
    const all = codings.get(name) ?? precompress(body);
    const coded: Asset['coded'] = {};
    for (const c of ['br', 'gzip'] as const) if (all[c].length < body.length) coded[c] = all[c];
    byName.set(name, { body, type: typeOf(name), coded });
  }
  const f = built.manifest.files;
  return {
    paths: {
      'app.js': `/assets/${f['app.js']}`,
      'app.css': `/assets/${f['app.css']}`,
      'favicon.svg': `/assets/${f['favicon.svg']}`,
    },
    byName,
    origin,
  };
}

let loading: Promise<Assets> | null = null;

/** The assets, loaded once per process (every test server shares them). */
export function loadAssets(logger: Logger): Promise<Assets> {
  loading ??= (async () => {
    const dist = readDist();
    if (dist) return toAssets(dist.built, 'dist', dist.codings);
    const t0 = Date.now();
    const built = await buildAssets();
    logger.info({ ms: Date.now() - t0 }, 'web assets built at start-up (web/dist missing or stale)');
    return toAssets(built, 'built');
  })();
  loading.catch(() => {
    loading = null;
  });
  return loading;
}

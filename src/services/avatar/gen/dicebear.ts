// DiceBear styles as d= defaults: d=dicebear-<style> (docs/protocols/gravatar.md §4 keeps the bare
// keywords Gravatar's; DiceBear has an identicon and initials of its own, hence the prefix). The
// packages are optional dependencies of one major version, loaded on the first request for a style;
// only styles whose artwork licence allows serving it here are offered (CC0, CC BY, MIT), and the
// licence each style's own package states is checked again when it loads. Deterministic per seed:
// DiceBear draws from its own PRNG seeded with the text given.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The major version served: another one draws other pictures for the same hash. */
export const DICEBEAR_MAJOR = 9;

/** Styles offered, by name; left out: avataaars and bottts (and their -neutral), whose licence is
 * a "free for personal and commercial use" note without terms. */
export const DICEBEAR_STYLES = [
  'adventurer',
  'adventurer-neutral',
  'big-ears',
  'big-ears-neutral',
  'big-smile',
  'croodles',
  'croodles-neutral',
  'dylan',
  'fun-emoji',
  'glass',
  'icons',
  'identicon',
  'initials',
  'lorelei',
  'lorelei-neutral',
  'micah',
  'miniavs',
  'notionists',
  'notionists-neutral',
  'open-peeps',
  'personas',
  'pixel-art',
  'pixel-art-neutral',
  'rings',
  'shapes',
  'thumbs',
  'toon-head',
] as const;

export type DicebearStyle = (typeof DICEBEAR_STYLES)[number];

const ALLOWED_LICENCES = new Set(['CC0 1.0', 'CC BY 4.0', 'MIT']);
export const KEYWORD_PREFIX = 'dicebear-';

/** The style a d= keyword names, or null when it names none offered here. */
export function dicebearStyle(keyword: string): DicebearStyle | null {
  if (!keyword.startsWith(KEYWORD_PREFIX)) return null;
  const name = keyword.slice(KEYWORD_PREFIX.length);
  return (DICEBEAR_STYLES as readonly string[]).includes(name) ? (name as DicebearStyle) : null;
}

const packageOf = (style: DicebearStyle | 'core') => `@dicebear/${style}`;

/** What an operator runs to serve `style`. */
export function installLine(style: DicebearStyle): string {
  return `npm install @dicebear/core@${DICEBEAR_MAJOR} ${packageOf(style)}@${DICEBEAR_MAJOR}`;
}

/** The style's package is missing (or of another major): answered 501 with the install line. */
export class DicebearMissing extends Error {
  readonly style: DicebearStyle;
  constructor(style: DicebearStyle) {
    super(`the DiceBear style ${style} is not installed on this server: ${installLine(style)}`);
    this.name = 'DicebearMissing';
    this.style = style;
  }
}

const versions = new Map<string, string | null>();

/** An installed package's version, read beside its entry without loading it; null when absent. */
function installedVersion(pkg: string): string | null {
  if (versions.has(pkg)) return versions.get(pkg) ?? null;
  let version: string | null = null;
  try {
    // DiceBear packages export lib/index.js only: package.json sits one folder up.
    const dir = dirname(dirname(fileURLToPath(import.meta.resolve(pkg))));
    const p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      name?: string;
      version?: string;
    };
    if (p.name === pkg && p.version?.split('.')[0] === String(DICEBEAR_MAJOR)) version = p.version;
  } catch {
    // not installed
  }
  versions.set(pkg, version);
  return version;
}

/**
 * What draws `style` here, as part of cache keys and ETags (`core@9.4.3/adventurer@9.4.3`): a
 * new version may draw another picture. Throws DicebearMissing when either package is absent.
 */
export function dicebearVersion(style: DicebearStyle): string {
  const core = installedVersion(packageOf('core'));
  const own = installedVersion(packageOf(style));
  if (!core || !own) throw new DicebearMissing(style);
  return `core@${core}/${style}@${own}`;
}

interface StyleModule {
  meta?: { license?: { name?: unknown } };
}
interface Core {
  createAvatar(style: StyleModule, options: { seed: string; size: number }): { toString(): string };
}

const loaded = new Map<DicebearStyle, Promise<StyleModule>>();

/** The style's module, imported once; refused when its stated licence is not one allowed here. */
function load(style: DicebearStyle): Promise<StyleModule> {
  let p = loaded.get(style);
  if (!p) {
    p = (import(packageOf(style)) as Promise<StyleModule>).then((m) => {
      const licence = m.meta?.license?.name;
      if (typeof licence !== 'string' || !ALLOWED_LICENCES.has(licence))
        throw new Error(`DiceBear style ${style} states the licence ${String(licence)}, not one served here`);
      return m;
    });
    p.catch(() => loaded.delete(style));
    loaded.set(style, p);
  }
  return p;
}

/** The style's SVG for `seed`, `size` px square. */
export async function dicebearSvg(style: DicebearStyle, seed: string, size: number): Promise<string> {
  const [core, mod] = await Promise.all([
    import('@dicebear/core') as Promise<unknown> as Promise<Core>,
    load(style),
  ]);
  return core.createAvatar(mod, { seed, size }).toString();
}

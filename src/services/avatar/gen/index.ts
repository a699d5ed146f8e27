// The d= keyword registry: one line per generator (docs/protocols/gravatar.md §4); their names
// are in names.ts, which requests read without loading the generators.
import type { Generator } from './art.ts';
import { identicon } from './identicon.ts';
import { monsterid } from './monsterid.ts';
import type { GeneratorName } from './names.ts';
import { retro } from './retro.ts';
import { robohash } from './robohash.ts';
import { blank, color, initials, mp } from './simple.ts';
import { wavatar } from './wavatar.ts';

export const GENERATORS = {
  mp,
  identicon,
  monsterid,
  wavatar,
  retro,
  robohash,
  blank,
  initials,
  color,
} satisfies Record<GeneratorName, Generator>;

export type { Art, Generator, GenOptions } from './art.ts';
export { type GeneratorName, isGenerator } from './names.ts';

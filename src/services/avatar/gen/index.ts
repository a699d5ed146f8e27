// The d= keyword registry: one line per generator (docs/protocols/gravatar.md §4).
import type { Generator } from './art.ts';
import { identicon } from './identicon.ts';
import { monsterid } from './monsterid.ts';
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
} satisfies Record<string, Generator>;

export type GeneratorName = keyof typeof GENERATORS;

export function isGenerator(s: string): s is GeneratorName {
  return Object.hasOwn(GENERATORS, s);
}

export type { Art, Generator, GenOptions } from './art.ts';

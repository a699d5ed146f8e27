// The d= keywords of the generators (docs/protocols/gravatar.md §4): what a request may name,
// without loading the generators themselves (gen/index.ts, loaded by the first render).
export const GENERATOR_NAMES = [
  'mp',
  'identicon',
  'monsterid',
  'wavatar',
  'retro',
  'robohash',
  'blank',
  'initials',
  'color',
] as const;

export type GeneratorName = (typeof GENERATOR_NAMES)[number];

const NAMES: ReadonlySet<string> = new Set(GENERATOR_NAMES);

export function isGenerator(s: string): s is GeneratorName {
  return NAMES.has(s);
}

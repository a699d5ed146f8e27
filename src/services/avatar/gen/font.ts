// A monoline stroke font for d=initials: A-Z and 0-9 as SVG paths on a 100-unit cap height, drawn
// with round caps. Bundled as code so initials look the same on every machine, with no font files
// or fontconfig involved.

/** Glyph path and advance width (cap height 100, y down). */
const GLYPHS: Record<string, [string, number]> = {
  A: ['M0 100L32 0L64 100M13 62H51', 64],
  B: ['M0 50H32A25 25 0 0 0 32 0H0V100H36A25 25 0 0 0 36 50', 61],
  C: ['M58 18A32 50 0 1 0 58 82', 60],
  D: ['M0 0V100H22A38 50 0 0 0 22 0Z', 60],
  E: ['M56 0H0V100H56M0 50H46', 56],
  F: ['M56 0H0V100M0 50H46', 56],
  G: ['M58 18A32 50 0 1 0 62 58H36', 62],
  H: ['M0 0V100M60 0V100M0 50H60', 60],
  I: ['M20 0V100M0 0H40M0 100H40', 40],
  J: ['M56 0V68A28 32 0 0 1 0 68', 56],
  K: ['M0 0V100M58 0L0 62M20 42L60 100', 60],
  L: ['M0 0V100H54', 54],
  M: ['M0 100V0L36 64L72 0V100', 72],
  N: ['M0 100V0L60 100V0', 60],
  O: ['M34 0A34 50 0 1 0 34 100A34 50 0 1 0 34 0Z', 68],
  P: ['M0 100V0H32A26 26 0 0 1 32 52H0', 58],
  Q: ['M34 0A34 50 0 1 0 34 100A34 50 0 1 0 34 0ZM40 72L68 104', 68],
  R: ['M0 100V0H32A26 26 0 0 1 32 52H0M30 52L60 100', 60],
  S: ['M56 16C51 5 42 0 30 0C15 0 4 9 4 24C4 56 58 42 58 74C58 90 46 100 30 100C17 100 6 94 2 82', 60],
  T: ['M0 0H60M30 0V100', 60],
  U: ['M0 0V66A30 34 0 0 0 60 66V0', 60],
  V: ['M0 0L32 100L64 0', 64],
  W: ['M0 0L20 100L42 26L64 100L84 0', 84],
  X: ['M0 0L60 100M60 0L0 100', 60],
  Y: ['M0 0L30 50L60 0M30 50V100', 60],
  Z: ['M2 0H58L0 100H60', 60],
  '0': ['M30 0A30 50 0 1 0 30 100A30 50 0 1 0 30 0Z', 60],
  '1': ['M8 20L32 0V100', 40],
  '2': ['M4 24C4 10 16 0 30 0C46 0 56 10 56 26C56 52 0 66 0 100H60', 60],
  '3': [
    'M4 12C10 4 19 0 30 0C45 0 54 10 54 24C54 38 44 48 28 48C46 48 58 58 58 74C58 90 46 100 30 100C17 100 7 95 2 86',
    60,
  ],
  '4': ['M44 100V0L0 70H62', 62],
  '5': ['M54 0H8L4 44C12 39 20 36 30 36C46 36 58 48 58 68C58 88 46 100 28 100C16 100 6 94 2 86', 60],
  '6': ['M50 4C26 10 4 32 4 70M4 70A28 30 0 1 0 60 70A28 30 0 1 0 4 70Z', 62],
  '7': ['M0 0H60L22 100', 60],
  '8': ['M30 48A24 24 0 1 1 30 0A24 24 0 1 1 30 48ZM30 48A28 26 0 1 0 30 100A28 26 0 1 0 30 48Z', 60],
  '9': ['M58 30A28 30 0 1 0 2 30A28 30 0 1 0 58 30ZM58 30C58 70 40 96 10 98', 62],
};

const GAP = 22;

/** Upper-case A-Z/0-9 only: accents are folded (É -> E), anything else is dropped. */
export function foldInitials(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '');
}

/** Initials from ?initials= (up to 3 letters) or from the first and last word of ?name=. */
export function deriveInitials(initials: string | undefined, name: string | undefined): string {
  if (initials) return foldInitials(initials).slice(0, 3);
  if (!name) return '';
  const words = (name ?? '')
    .split(/[\s._-]+/)
    .map(foldInitials)
    .filter((w) => w !== '');
  if (words.length === 0) return '';
  const first = words[0]![0]!;
  return words.length === 1 ? first : first + words[words.length - 1]![0]!;
}

/** The letters as one stroked path centred on (cx, cy) with cap height `cap`, in caller units. */
export function drawText(text: string, cx: number, cy: number, cap: number, colour: string): string {
  const glyphs = [...text].map((c) => GLYPHS[c]).filter((g): g is [string, number] => g !== undefined);
  if (glyphs.length === 0) return '';
  const width = glyphs.reduce((w, g) => w + g[1], 0) + GAP * (glyphs.length - 1);
  const k = cap / 100;
  let x = -width / 2;
  let parts = '';
  for (const [d, w] of glyphs) {
    parts += `<path transform="translate(${x} -50)" d="${d}"/>`;
    x += w + GAP;
  }
  const stroke = `fill="none" stroke="${colour}" stroke-width="13" stroke-linecap="round" stroke-linejoin="round"`;
  return `<g transform="translate(${cx} ${cy}) scale(${k})" ${stroke}>${parts}</g>`;
}

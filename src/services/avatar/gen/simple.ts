// The plain defaults: mp (a grey silhouette, the same for everyone), blank (transparent), color
// (a solid hash colour) and initials (letters on a hash colour).
import { hex, seedColour } from '../seed.ts';
import { canvas, type Generator, svgDoc } from './art.ts';
import { drawText } from './font.ts';

export const mp: Generator = (_seed, size) =>
  svgDoc(
    size,
    100,
    '<rect width="100" height="100" fill="#c3c9d1"/><circle cx="50" cy="39" r="19" fill="#f2f4f7"/><path d="M12 100C12 76 28 63 50 63C72 63 88 76 88 100Z" fill="#f2f4f7"/>',
  );

export const blank: Generator = (_seed, size) => ({ kind: 'raw', rgba: canvas(size, [0, 0, 0], 0) });

export const color: Generator = (seed, size) => ({ kind: 'raw', rgba: canvas(size, seedColour(seed, 0.55)) });

export const initials: Generator = (seed, size, opts) => {
  const bg = hex(seedColour(seed, 0.42));
  const letters = opts.initials.slice(0, 3);
  // Two letters are the usual case; one stands taller, three shrink to fit.
  const cap = letters.length <= 1 ? 44 : letters.length === 2 ? 36 : 26;
  return svgDoc(
    size,
    100,
    `<rect width="100" height="100" fill="${bg}"/>${drawText(letters, 50, 50, cap, '#ffffff')}`,
  );
};

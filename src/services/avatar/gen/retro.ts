// d=retro: an 8-bit sprite (docs/protocols/gravatar.md §6): a 5x5 grid whose columns 0-2 come from
// successive hash bits and columns 3-4 mirror 1-0, one hash colour on a light background, drawn straight
// into pixels on whole-pixel cell edges so it stays crisp (nearest-neighbour) at any size.
import { hsl } from '../seed.ts';
import { canvas, edges, fillRect, type Generator, gridMargin } from './art.ts';

export const retro: Generator = (seed, size) => {
  const bits = seed.bytes(2);
  const cells: boolean[][] = [];
  let on = 0;
  for (let row = 0; row < 5; row++) {
    const r: boolean[] = [];
    for (let col = 0; col < 3; col++) {
      const bit = row * 3 + col;
      const v = ((bits[bit >> 3]! >> (bit & 7)) & 1) === 1;
      r.push(v);
      if (v) on++;
    }
    cells.push([r[0]!, r[1]!, r[2]!, r[1]!, r[0]!]);
  }
  // A nearly empty or nearly full sprite reads as a blob: flip it to the readable side.
  if (on < 5 || on > 10) for (const r of cells) for (let c = 0; c < 5; c++) r[c] = !r[c];
  const hue = seed.int(360);
  const fg = hsl(hue, seed.range(0.5, 0.75), seed.range(0.42, 0.52));
  const bg = hsl(hue, 0.25, 0.94);

  const buf = canvas(size, bg);
  const m = gridMargin(size);
  const e = edges(m, size - 2 * m, 5);
  for (let row = 0; row < 5; row++) {
    for (let col = 0; col < 5; col++) {
      if (cells[row]![col]) fillRect(buf, size, e[col]!, e[row]!, e[col + 1]!, e[row + 1]!, fg);
    }
  }
  return { kind: 'raw', rgba: buf };
};

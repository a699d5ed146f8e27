// d=identicon: a Don Park style 9-block (docs/protocols/gravatar.md §6). A centre patch, four corner
// patches and four side patches, each a shape from a small set turned by quarter turns and optionally
// inverted, in one colour from the hash on white. Patch boxes sit on whole pixels so straight edges stay
// crisp at any size; only diagonals are anti-aliased.
import { hex, seedColour } from '../seed.ts';
import { edges, type Generator, gridMargin, n, svgDoc } from './art.ts';

type Pt = [number, number];
/** Shapes in a unit square; several polygons per shape are allowed. */
const SHAPES: Pt[][][] = [
  [
    [
      [0, 0],
      [1, 0],
      [1, 1],
      [0, 1],
    ],
  ],
  [
    [
      [0, 0],
      [1, 0],
      [0, 1],
    ],
  ],
  [
    [
      [0.5, 0],
      [1, 1],
      [0, 1],
    ],
  ],
  [
    [
      [0, 0],
      [0.5, 0],
      [0.5, 1],
      [0, 1],
    ],
  ],
  [
    [
      [0.5, 0],
      [1, 0.5],
      [0.5, 1],
      [0, 0.5],
    ],
  ],
  [
    [
      [0, 0],
      [1, 0.5],
      [1, 1],
      [0.5, 1],
    ],
  ],
  [
    [
      [0.25, 0.25],
      [0.75, 0.25],
      [0.75, 0.75],
      [0.25, 0.75],
    ],
  ],
  [
    [
      [0, 0],
      [0.5, 0],
      [0, 0.5],
    ],
    [
      [1, 1],
      [0.5, 1],
      [1, 0.5],
    ],
  ],
  [
    [
      [0, 0],
      [1, 0.5],
      [0.5, 1],
    ],
  ],
  [
    [
      [0, 0],
      [1, 0],
      [0.5, 0.5],
    ],
    [
      [0, 1],
      [1, 1],
      [0.5, 0.5],
    ],
  ],
  [
    [
      [0, 0],
      [0.5, 0],
      [0.5, 0.5],
      [0, 0.5],
    ],
  ],
  [
    [
      [0.5, 0],
      [1, 0.5],
      [0.5, 1],
    ],
  ],
  [
    [
      [0, 0.5],
      [0.5, 0],
      [1, 0.5],
      [0.5, 1],
      [0.5, 0.5],
    ],
  ],
  [
    [
      [0, 0],
      [1, 0],
      [1, 0.5],
      [0, 1],
    ],
  ],
];
/** Shapes that look the same after any quarter turn: the only ones fit for the centre. */
const CENTRE = [0, 4, 6, 9];

function turn(p: Pt, quarter: number): Pt {
  let [x, y] = p;
  for (let i = 0; i < (quarter & 3); i++) [x, y] = [1 - y, x];
  return [x, y];
}

function patch(
  box: [number, number, number, number],
  shape: number,
  quarter: number,
  invert: boolean,
  fg: string,
  bg: string,
): string {
  const [x0, y0, x1, y1] = box;
  const polys = SHAPES[shape]!.map(
    (poly) =>
      `M${poly
        .map((p) => {
          const [u, v] = turn(p, quarter);
          return `${n(x0 + u * (x1 - x0))} ${n(y0 + v * (y1 - y0))}`;
        })
        .join('L')}Z`,
  ).join('');
  const rect = invert
    ? `<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" fill="${fg}"/>`
    : '';
  return `${rect}<path d="${polys}" fill="${invert ? bg : fg}"/>`;
}

export const identicon: Generator = (seed, size) => {
  const centre = CENTRE[seed.int(CENTRE.length)]!;
  // An inverted full square would leave the centre empty.
  const centreInvert = seed.int(4) === 0 && centre !== 0;
  const corner = seed.int(SHAPES.length);
  const cornerTurn = seed.int(4);
  const cornerInvert = seed.int(3) === 0;
  let side = seed.int(SHAPES.length);
  if (side === corner) side = (side + 1) % SHAPES.length;
  const sideTurn = seed.int(4);
  const sideInvert = seed.int(3) === 0;
  const fg = hex(seedColour(seed, 0.5));
  const bg = '#ffffff';

  const m = gridMargin(size);
  const e = edges(m, size - 2 * m, 3);
  const box = (cx: number, cy: number): [number, number, number, number] => [
    e[cx]!,
    e[cy]!,
    e[cx + 1]!,
    e[cy + 1]!,
  ];
  // Corners and sides go round clockwise, each a quarter turn on from the last: rotational symmetry.
  const corners: Pt[] = [
    [0, 0],
    [2, 0],
    [2, 2],
    [0, 2],
  ];
  const sides: Pt[] = [
    [1, 0],
    [2, 1],
    [1, 2],
    [0, 1],
  ];
  let body = `<rect width="${size}" height="${size}" fill="${bg}"/>`;
  body += patch(box(1, 1), centre, 0, centreInvert, fg, bg);
  corners.forEach(([cx, cy], i) => {
    body += patch(box(cx, cy), corner, cornerTurn + i, cornerInvert, fg, bg);
  });
  sides.forEach(([cx, cy], i) => {
    body += patch(box(cx, cy), side, sideTurn + i, sideInvert, fg, bg);
  });
  return svgDoc(size, size, body);
};

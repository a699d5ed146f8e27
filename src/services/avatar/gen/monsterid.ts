// d=monsterid: a cartoon monster composed from parts chosen by the hash (body shape, horns or
// antennae, one to three eyes, mouth, arms, spots). Our own vector parts, drawn in a 100-unit box.
import { hex, hsl } from '../seed.ts';
import { type Generator, n, svgDoc } from './art.ts';

const INK = '#2a2630';

export const monsterid: Generator = (seed, size) => {
  const hue = seed.int(360);
  const sat = seed.range(0.5, 0.7);
  const skin = hex(hsl(hue, sat, seed.range(0.55, 0.63)));
  const shade = hex(hsl(hue, sat, 0.38));
  const light = hex(hsl(hue, sat, 0.75));
  const bg = hex(hsl((hue + 180 + seed.int(60)) % 360, 0.35, 0.92));
  const stroke = `stroke="${INK}" stroke-width="2.2" stroke-linejoin="round" stroke-linecap="round"`;

  const shapes = [
    `<circle cx="50" cy="55" r="30"/>`,
    `<rect x="24" y="24" width="52" height="60" rx="22"/>`,
    `<path d="M50 22C66 22 72 40 76 56C81 74 70 86 50 86C30 86 19 74 24 56C28 40 34 22 50 22Z"/>`,
    `<ellipse cx="50" cy="58" rx="36" ry="27"/>`,
  ];
  const shapeIdx = seed.int(shapes.length);
  const top = [25, 24, 22, 31][shapeIdx]!;
  const body = shapes[shapeIdx]!.replace('/>', ` fill="${skin}" ${stroke}/>`);

  let back = '';
  switch (seed.int(4)) {
    case 1: // horns
      back = `<path d="M34 ${top + 8}L26 ${top - 12}L44 ${top + 2}Z M66 ${top + 8}L74 ${top - 12}L56 ${top + 2}Z" fill="${light}" ${stroke}/>`;
      break;
    case 2: // antennae
      back = `<path d="M42 ${top + 4}L34 ${top - 12} M58 ${top + 4}L66 ${top - 12}" fill="none" ${stroke}/><circle cx="34" cy="${top - 13}" r="4.5" fill="${light}" ${stroke}/><circle cx="66" cy="${top - 13}" r="4.5" fill="${light}" ${stroke}/>`;
      break;
    case 3: // tuft
      back = `<path d="M40 ${top + 6}L44 ${top - 10}L50 ${top + 2}L56 ${top - 12}L60 ${top + 6}Z" fill="${shade}" ${stroke}/>`;
      break;
  }
  const legs = `<rect x="33" y="76" width="11" height="18" rx="5" fill="${shade}" ${stroke}/><rect x="56" y="76" width="11" height="18" rx="5" fill="${shade}" ${stroke}/>`;
  let arms = '';
  switch (seed.int(3)) {
    case 1:
      arms = `<ellipse cx="17" cy="60" rx="7" ry="11" fill="${skin}" ${stroke}/><ellipse cx="83" cy="60" rx="7" ry="11" fill="${skin}" ${stroke}/>`;
      break;
    case 2:
      arms = `<path d="M24 56L10 40 M76 56L90 40" fill="none" stroke="${INK}" stroke-width="8" stroke-linecap="round"/><path d="M24 56L10 40 M76 56L90 40" fill="none" stroke="${skin}" stroke-width="4" stroke-linecap="round"/>`;
      break;
  }
  let spots = '';
  const spotCount = seed.int(4);
  for (let i = 0; i < spotCount; i++) {
    const x = [34, 64, 42, 58][i]!;
    const y = [70, 68, 76, 77][i]!;
    spots += `<circle cx="${x}" cy="${y}" r="${n(seed.range(2, 3.5))}" fill="${light}"/>`;
  }

  const eyeCount = 1 + seed.int(3);
  const eyeY = top + 20;
  const eyeR = eyeCount === 1 ? 11 : eyeCount === 2 ? 8.5 : 7;
  const xs = eyeCount === 1 ? [50] : eyeCount === 2 ? [39, 61] : [34, 50, 66];
  const dx = seed.range(-2, 2);
  const dy = seed.range(-1.5, 2);
  const sleepy = seed.int(4) === 0;
  let eyes = '';
  for (const [i, x] of xs.entries()) {
    const y = eyeCount === 3 && i === 1 ? eyeY - 5 : eyeY;
    eyes += `<circle cx="${x}" cy="${y}" r="${eyeR}" fill="#fff" ${stroke}/>`;
    eyes += `<circle cx="${n(x + dx)}" cy="${n(y + dy)}" r="${n(eyeR * 0.45)}" fill="${INK}"/>`;
    if (sleepy)
      eyes += `<path d="M${n(x - eyeR)} ${y}A${eyeR} ${eyeR} 0 0 1 ${n(x + eyeR)} ${y}Z" fill="${skin}" ${stroke}/>`;
  }

  const my = eyeY + eyeR + 10;
  const mouths = [
    `<path d="M38 ${my}Q50 ${my + 10} 62 ${my}" fill="none" ${stroke}/>`,
    `<path d="M36 ${my - 2}Q50 ${my + 16} 64 ${my - 2}Z" fill="${INK}" ${stroke}/><path d="M42 ${my - 1}L45 ${my + 4}L48 ${my} M52 ${my}L55 ${my + 4}L58 ${my - 1}" fill="#fff"/>`,
    `<path d="M36 ${my}L41 ${my + 4}L46 ${my}L50 ${my + 4}L54 ${my}L59 ${my + 4}L64 ${my}" fill="none" ${stroke}/>`,
    `<ellipse cx="50" cy="${my + 2}" rx="5" ry="6" fill="${INK}"/>`,
    `<rect x="38" y="${my - 2}" width="24" height="8" rx="4" fill="#fff" ${stroke}/><path d="M44 ${my - 2}V${my + 6}M50 ${my - 2}V${my + 6}M56 ${my - 2}V${my + 6}" ${stroke}/>`,
  ];
  const mouth = seed.pick(mouths);

  return svgDoc(
    size,
    100,
    `<rect width="100" height="100" fill="${bg}"/>${back}${legs}${arms}${body}${spots}${eyes}${mouth}`,
  );
};

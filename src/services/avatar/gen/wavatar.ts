// d=wavatar: a round cartoon face composed from parts chosen by the hash (hair wave, brows, eyes,
// mouth, cheeks) over a two-tone background. Our own vector parts, drawn in a 100-unit box.
import { hex, hsl } from '../seed.ts';
import { type Generator, svgDoc } from './art.ts';

const INK = '#2b2a33';

export const wavatar: Generator = (seed, size) => {
  const hue = seed.int(360);
  const bgHue = (hue + 120 + seed.int(120)) % 360;
  const bg = hex(hsl(bgHue, 0.5, 0.82));
  const wave = hex(hsl(bgHue, 0.5, 0.72));
  const face = hex(hsl(hue, seed.range(0.5, 0.7), seed.range(0.6, 0.68)));
  const hairC = hex(hsl(hue, 0.55, 0.34));
  const line = `stroke="${INK}" stroke-width="3" stroke-linecap="round" stroke-linejoin="round" fill="none"`;

  let body = `<rect width="100" height="100" fill="${bg}"/><path d="M0 70Q25 58 50 70T100 70V100H0Z" fill="${wave}"/>`;
  body += `<circle cx="50" cy="54" r="36" fill="${face}" stroke="${INK}" stroke-width="2.2"/>`;
  switch (seed.int(4)) {
    case 1: // swoop
      body += `<path d="M18 44C20 22 40 14 56 16C70 18 80 26 84 40C72 30 56 28 44 34C34 38 26 40 18 44Z" fill="${hairC}" stroke="${INK}" stroke-width="2.2" stroke-linejoin="round"/>`;
      break;
    case 2: // spikes
      body += `<path d="M24 32L30 12L40 26L50 8L60 26L70 12L76 32C66 24 34 24 24 32Z" fill="${hairC}" stroke="${INK}" stroke-width="2.2" stroke-linejoin="round"/>`;
      break;
    case 3: // curl
      body += `<path d="M50 19C44 10 52 4 58 8" ${line}/>`;
      break;
  }
  const ey = 50;
  switch (seed.int(3)) {
    case 1:
      body += `<path d="M31 38L43 41M57 41L69 38" ${line}/>`;
      break;
    case 2:
      body += `<path d="M31 39Q37 33 43 38M57 38Q63 33 69 39" ${line}/>`;
      break;
  }
  switch (seed.int(5)) {
    case 0:
      body += `<circle cx="37" cy="${ey}" r="4" fill="${INK}"/><circle cx="63" cy="${ey}" r="4" fill="${INK}"/>`;
      break;
    case 1:
      body += `<ellipse cx="37" cy="${ey}" rx="7" ry="8.5" fill="#fff" stroke="${INK}" stroke-width="2.2"/><ellipse cx="63" cy="${ey}" rx="7" ry="8.5" fill="#fff" stroke="${INK}" stroke-width="2.2"/><circle cx="38" cy="${ey + 2}" r="3.5" fill="${INK}"/><circle cx="64" cy="${ey + 2}" r="3.5" fill="${INK}"/>`;
      break;
    case 2:
      body += `<path d="M31 ${ey + 2}Q37 ${ey - 6} 43 ${ey + 2}M57 ${ey + 2}Q63 ${ey - 6} 69 ${ey + 2}" ${line}/>`;
      break;
    case 3:
      body += `<path d="M31 ${ey}H43M57 ${ey}H69" ${line}/>`;
      break;
    default:
      body += `<circle cx="37" cy="${ey}" r="7" fill="${INK}"/><circle cx="63" cy="${ey}" r="7" fill="${INK}"/><circle cx="39.5" cy="${ey - 2.5}" r="2.2" fill="#fff"/><circle cx="65.5" cy="${ey - 2.5}" r="2.2" fill="#fff"/>`;
  }
  if (seed.bool())
    body += `<ellipse cx="28" cy="64" rx="6" ry="3.5" fill="#ff6f91" opacity="0.45"/><ellipse cx="72" cy="64" rx="6" ry="3.5" fill="#ff6f91" opacity="0.45"/>`;
  const my = 68;
  const mouths = [
    `<path d="M38 ${my}Q50 ${my + 10} 62 ${my}" ${line}/>`,
    `<path d="M36 ${my - 2}Q50 ${my + 18} 64 ${my - 2}Z" fill="${INK}" stroke="${INK}" stroke-width="2.2" stroke-linejoin="round"/><path d="M43 ${my + 7}Q50 ${my + 3} 57 ${my + 7}Q50 ${my + 11} 43 ${my + 7}Z" fill="#ff7a8a"/>`,
    `<ellipse cx="50" cy="${my + 3}" rx="5" ry="6" fill="${INK}"/>`,
    `<path d="M40 ${my + 2}H60" ${line}/>`,
    `<path d="M38 ${my + 2}Q44 ${my - 3} 50 ${my + 2}T62 ${my + 2}" ${line}/>`,
    `<path d="M38 ${my}Q50 ${my + 8} 62 ${my}" ${line}/><path d="M46 ${my + 4}Q50 ${my + 14} 54 ${my + 4}" fill="#ff7a8a" stroke="${INK}" stroke-width="2"/>`,
  ];
  body += seed.pick(mouths);
  return svgDoc(size, 100, body);
};

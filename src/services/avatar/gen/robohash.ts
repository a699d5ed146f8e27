// d=robohash: a robot composed from parts chosen by the hash (head shape, antenna, eyes, mouth,
// ears, chest lights). Our own vector parts, not the RoboHash artwork, in a 100-unit box.
import { hex, hsl } from '../seed.ts';
import { type Generator, svgDoc } from './art.ts';

const INK = '#262a33';

export const robohash: Generator = (seed, size) => {
  const hue = seed.int(360);
  const metal = hex(hsl(hue, seed.range(0.3, 0.55), seed.range(0.56, 0.64)));
  const dark = hex(hsl(hue, 0.3, 0.36));
  const glowHue = (hue + 150 + seed.int(60)) % 360;
  const glow = hex(hsl(glowHue, 0.95, 0.6));
  const bg = hex(hsl((hue + 200) % 360, 0.3, 0.91));
  const sw = (w: number) =>
    `stroke="${INK}" stroke-width="${w}" stroke-linejoin="round" stroke-linecap="round"`;
  const s = sw(2.2);

  let body = `<rect width="100" height="100" fill="${bg}"/>`;
  // Torso and neck.
  body += `<path d="M18 100V92C18 84 24 80 32 80H68C76 80 82 84 82 92V100Z" fill="${metal}" ${s}/>`;
  body += `<rect x="43" y="70" width="14" height="12" fill="${dark}" ${s}/>`;
  const lights = [glow, hex(hsl(glowHue + 90, 0.9, 0.6)), hex(hsl(glowHue + 200, 0.9, 0.6))];
  for (let i = 0; i < 3; i++) body += `<circle cx="${40 + i * 10}" cy="90" r="3" fill="${lights[i]}" ${s}/>`;

  const antenna = seed.int(4);
  if (antenna === 0)
    body += `<path d="M50 26V12" fill="none" ${s}/><circle cx="50" cy="10" r="4.5" fill="${glow}" ${s}/>`;
  else if (antenna === 1)
    body += `<path d="M38 26L32 12M62 26L68 12" fill="none" ${s}/><circle cx="32" cy="11" r="3.5" fill="${glow}" ${s}/><circle cx="68" cy="11" r="3.5" fill="${glow}" ${s}/>`;
  else if (antenna === 2) body += `<path d="M50 26L46 18L54 16L48 6" fill="none" ${sw(3)}/>`;
  else body += `<path d="M50 26V18" ${s}/><path d="M38 16Q50 4 62 16Z" fill="${metal}" ${s}/>`;

  // Ears (bolts) sit behind the head.
  body += `<rect x="14" y="40" width="10" height="16" rx="3" fill="${dark}" ${s}/><rect x="76" y="40" width="10" height="16" rx="3" fill="${dark}" ${s}/>`;
  const heads = [
    `<rect x="22" y="26" width="56" height="46" rx="8"/>`,
    `<path d="M22 72V46C22 30 34 24 50 24C66 24 78 30 78 46V72Z"/>`,
    `<path d="M26 26H74L80 72H20Z"/>`,
    `<rect x="22" y="26" width="56" height="46" rx="20"/>`,
  ];
  body += seed.pick(heads).replace('/>', ` fill="${metal}" ${s}/>`);

  switch (seed.int(4)) {
    case 0: // visor
      body += `<rect x="29" y="38" width="42" height="13" rx="6.5" fill="${INK}"/><circle cx="40" cy="44.5" r="3.5" fill="${glow}"/><circle cx="60" cy="44.5" r="3.5" fill="${glow}"/>`;
      break;
    case 1: // round lenses
      body += `<circle cx="38" cy="45" r="8" fill="#fff" ${s}/><circle cx="62" cy="45" r="8" fill="#fff" ${s}/><circle cx="38" cy="45" r="4" fill="${glow}" ${s}/><circle cx="62" cy="45" r="4" fill="${glow}" ${s}/>`;
      break;
    case 2: // square eyes
      body += `<rect x="31" y="38" width="13" height="13" rx="2" fill="${glow}" ${s}/><rect x="56" y="38" width="13" height="13" rx="2" fill="${glow}" ${s}/>`;
      break;
    default: // cyclops
      body += `<circle cx="50" cy="45" r="11" fill="#fff" ${s}/><circle cx="50" cy="45" r="6" fill="${glow}" ${s}/><circle cx="52" cy="43" r="2" fill="#fff"/>`;
  }
  switch (seed.int(4)) {
    case 0: // grill
      body += `<rect x="36" y="57" width="28" height="9" rx="2" fill="${dark}" ${s}/><path d="M43 57V66M50 57V66M57 57V66" ${s}/>`;
      break;
    case 1: // teeth
      body += `<rect x="36" y="57" width="28" height="9" rx="2" fill="#fff" ${s}/><path d="M36 61.5H64M43 57V66M50 57V66M57 57V66" ${sw(1.6)}/>`;
      break;
    case 2: // speaker slots
      body += `<path d="M38 58H62M40 62H60M42 66H58" fill="none" ${s}/>`;
      break;
    default: // LED smile
      body += `<path d="M37 58Q50 68 63 58" fill="none" stroke="${INK}" stroke-width="5" stroke-linecap="round"/><path d="M37 58Q50 68 63 58" fill="none" stroke="${glow}" stroke-width="2.2" stroke-linecap="round"/>`;
  }
  return svgDoc(size, 100, body);
};

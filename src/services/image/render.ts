// The sharp (libvips) pipeline: decode with pixel caps, resize/crop, effects, encode. Metadata
// (EXIF, XMP, ICC) is dropped because sharp only keeps it when asked to.
import type { Metadata, Sharp } from 'sharp';
import { loadSharp, type SharpFn } from '../../infra/media/sharp.ts';
import { inSpan } from '../../infra/observe/tracing.ts';
import { type Format, type ImageOptions, type Limits, outputSize } from './params.ts';
import { rngFrom } from './rng.ts';
import { type Loaded, SourceError } from './source.ts';

export interface RenderConfig extends Limits {
  maxSourcePixels: number;
  crop: 'attention' | 'entropy' | 'centre';
  quality: number;
}

export interface Rendered {
  body: Buffer;
  width: number;
  height: number;
}

// Raster formats accepted from directories and upstreams. SVG/PDF and friends are refused: they are
// programs more than pictures, and their pixel size is whatever they claim.
export const RASTER: ReadonlySet<string> = new Set(['jpeg', 'png', 'webp', 'avif', 'heif', 'gif', 'tiff']);

const GRAIN_SIZE = 256;
let grainNoise: Buffer | undefined;

/** A square tile of soft monochrome noise (side <= 256), overlaid on generated art against banding. */
function grain(side: number): Buffer {
  if (!grainNoise) {
    const rng = rngFrom(Buffer.from('devutil-grain-tile-v1-----------'));
    grainNoise = Buffer.alloc(GRAIN_SIZE * GRAIN_SIZE);
    for (let i = 0; i < grainNoise.length; i++) grainNoise[i] = 128 + Math.round((rng.next() - 0.5) * 14);
  }
  return grainNoise.subarray(0, side * side);
}

function position(sharp: SharpFn, crop: RenderConfig['crop']): string | number {
  if (crop === 'attention') return sharp.strategy.attention;
  if (crop === 'entropy') return sharp.strategy.entropy;
  return 'centre';
}

export function encode(img: Sharp, format: Format, quality: number): Sharp {
  switch (format) {
    case 'webp':
      return img.webp({ quality, effort: 4 });
    case 'jpeg':
      return img.jpeg({ quality, progressive: true, optimizeCoding: true });
    case 'png':
      return img.png({ compressionLevel: 6 });
    case 'avif':
      // effort 2: AVIF at the default effort costs seconds per megapixel.
      return img.avif({ quality: Math.max(1, quality - 20), effort: 2 });
  }
}

async function fromBytes(
  sharp: SharpFn,
  data: Buffer,
  o: ImageOptions,
  c: RenderConfig,
): Promise<[Sharp, number, number]> {
  const img = sharp(data, { limitInputPixels: c.maxSourcePixels, autoOrient: true, failOn: 'error' });
  let meta: Metadata;
  try {
    meta = await img.metadata();
  } catch (err) {
    throw new SourceError(`source is not a readable image: ${(err as Error).message}`, { cause: err });
  }
  if (!meta.format || !RASTER.has(meta.format)) throw new SourceError(`source format ${meta.format} refused`);
  const sw = meta.autoOrient?.width ?? meta.width;
  const sh = meta.autoOrient?.height ?? meta.height;
  if (!sw || !sh) throw new SourceError('source has no size');
  if (sw * sh > c.maxSourcePixels) throw new SourceError(`source has ${sw * sh} pixels, over the cap`);
  const [w, h] = outputSize(o, sw, sh, c);
  return [img.resize(w, h, { fit: 'cover', position: position(sharp, c.crop) }), w, h];
}

function fromArt(
  sharp: SharpFn,
  art: Extract<Loaded, { kind: 'art' }>,
  o: ImageOptions,
  c: RenderConfig,
): [Sharp, number, number] {
  const [w, h] = outputSize(o, art.width, art.height, c);
  const side = Math.min(GRAIN_SIZE, w, h);
  const img = sharp(Buffer.from(art.svg(w, h)), { limitInputPixels: c.maxSourcePixels }).composite([
    {
      input: grain(side),
      raw: { width: side, height: side, channels: 1 },
      tile: true,
      blend: 'overlay',
    },
  ]);
  return [img, w, h];
}

export function render(loaded: Loaded, o: ImageOptions, c: RenderConfig): Promise<Rendered> {
  return inSpan('render image', { 'devutil.render.format': o.format }, () => renderImage(loaded, o, c));
}

async function renderImage(loaded: Loaded, o: ImageOptions, c: RenderConfig): Promise<Rendered> {
  const sharp = await loadSharp();
  let [img, width, height] =
    loaded.kind === 'bytes' ? await fromBytes(sharp, loaded.data, o, c) : fromArt(sharp, loaded, o, c);
  if (o.grayscale) img = img.grayscale();
  if (o.blur > 0) img = img.blur(o.blur);
  const body = await encode(img, o.format, c.quality).toBuffer();
  return { body, width, height };
}

// Pixels out: generator art and stored/mirrored originals become exactly size x size in the
// requested format. Outputs carry no metadata (sharp strips EXIF/ICC unless asked to keep it).
import type { Sharp } from 'sharp';
import { loadSharp } from '../../infra/media/sharp.ts';
import { inSpan } from '../../infra/observe/tracing.ts';
import type { Art } from './gen/art.ts';

export type Format = 'png' | 'jpeg' | 'webp' | 'gif';

export const MIME: Record<Format, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

function encode(img: Sharp, format: Format): Promise<Buffer> {
  switch (format) {
    case 'png':
      return img.png({ compressionLevel: 6 }).toBuffer();
    case 'jpeg':
      // JPEG has no alpha: transparent parts (blank, uploads with alpha) go white, as on Gravatar.
      return img.flatten({ background: '#ffffff' }).jpeg({ quality: 90 }).toBuffer();
    case 'webp':
      return img.webp({ quality: 90, alphaQuality: 100 }).toBuffer();
    case 'gif':
      return img.gif({ effort: 7 }).toBuffer();
  }
}

/** Renders generator art drawn for `size` (SVG at 72 dpi is 1 user px = 1 px). */
export function renderArt(art: Art, size: number, format: Format): Promise<Buffer> {
  const attrs = { 'devutil.render.format': format, 'devutil.render.size': size };
  return inSpan('render avatar', attrs, () => rasterise(art, size, format));
}

async function rasterise(art: Art, size: number, format: Format): Promise<Buffer> {
  const sharp = await loadSharp();
  const img =
    art.kind === 'svg'
      ? sharp(Buffer.from(art.svg))
      : sharp(art.rgba, { raw: { width: size, height: size, channels: 4 } });
  return encode(img, format);
}

/** Scales a stored square original (upload or mirror) to size x size, cropping if it is not square. */
export async function resizeImage(
  input: Buffer,
  size: number,
  format: Format,
  maxPixels: number,
): Promise<Buffer> {
  const sharp = await loadSharp();
  const img = sharp(input, { limitInputPixels: maxPixels, failOn: 'error' })
    .rotate()
    .resize(size, size, { fit: 'cover', position: 'attention', kernel: 'lanczos3' });
  return encode(img, format);
}

// PNG and JPEG from an engine's SVG with sharp (librsvg), run like an engine in a render process:
// parsing a large SVG allocates natively (glib aborts its process when an allocation fails), so it
// is bounded like the engines that made the SVG. The picture is scaled down to fit `limit` pixels
// on each side: a giant canvas costs at most limit x limit pixels, never what its SVG size asks for.
import { loadSharp } from '../../../infra/media/sharp.ts';
import { DiagramTooLarge } from './diagram-error.ts';

export async function warm(): Promise<void> {
  await loadSharp();
}

/** `format` (png or jpeg) from `svg`, at most `limit` pixels a side. */
export async function rasterise(svg: Buffer | string, format: string, limit: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const input = typeof svg === 'string' ? Buffer.from(svg) : svg;
  let meta: { width?: number | undefined; height?: number | undefined };
  try {
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch {
    throw new Error('the SVG of this diagram cannot be rasterised');
  }
  const side = Math.max(meta.width ?? 1, meta.height ?? 1);
  // Density 72 is the SVG's own size; the engines' SVGs are small, so scale up to 2x where it fits.
  const scale = Math.min(2, limit / side);
  if (scale * side < 1) throw new DiagramTooLarge('the diagram is too large to rasterise');
  const img = sharp(input, { density: Math.max(1, 72 * scale), limitInputPixels: limit * limit * 4 }).timeout(
    {
      seconds: 10,
    },
  );
  try {
    if (format === 'jpeg')
      return await img.flatten({ background: '#ffffff' }).jpeg({ quality: 90 }).toBuffer();
    return await img.png().toBuffer();
  } catch (err) {
    throw new Error(`rasterising failed: ${err instanceof Error ? err.message.slice(0, 200) : err}`);
  }
}

/** The render-process entry: `source` is the SVG, options.limit the largest side. */
export async function render(
  source: string,
  format: string,
  options: Record<string, string>,
): Promise<Uint8Array> {
  return rasterise(source, format, Number(options['limit']) || 4096);
}

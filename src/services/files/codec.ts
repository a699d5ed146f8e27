// The stored encodings: brotli (default, chosen by measurement in docs/files.md), gzip, or none.
// A sample decides whether compressing pays before the whole file is streamed through the codec.
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

export type Codec = 'br' | 'gzip' | 'none';
export type Encoding = 'br' | 'gzip' | 'identity';

export function encoder(codec: Exclude<Codec, 'none'>, level: number, sizeHint = 0): Transform {
  if (codec === 'gzip') return zlib.createGzip({ level: Math.min(level, 9), chunkSize: 64 * 1024 });
  return zlib.createBrotliCompress({
    chunkSize: 64 * 1024,
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: level,
      [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_GENERIC,
      ...(sizeHint > 0 ? { [zlib.constants.BROTLI_PARAM_SIZE_HINT]: sizeHint } : {}),
    },
  });
}

export function decoder(enc: Exclude<Encoding, 'identity'>): Transform {
  return enc === 'gzip' ? zlib.createGunzip() : zlib.createBrotliDecompress();
}

/** Bytes saved on the sample, as a share of it (0-1); used before committing to compress. */
export function sampleSaving(codec: Exclude<Codec, 'none'>, level: number, sample: Buffer): number {
  if (sample.length === 0) return 0;
  const out =
    codec === 'gzip'
      ? zlib.gzipSync(sample, { level: Math.min(level, 9) })
      : zlib.brotliCompressSync(sample, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: level } });
  return 1 - out.length / sample.length;
}

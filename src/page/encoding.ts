// Content-coding of the page's assets (which coding a client takes is infra/http/encoding.ts's call):
// compressed once at load, when the build did not write the codings beside them.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export type Coding = 'br' | 'gzip';

export function precompress(body: Buffer): Record<Coding, Buffer> {
  return {
    br: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
    gzip: gzipSync(body, { level: 9 }),
  };
}

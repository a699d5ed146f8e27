// Content-coding for the page and its assets (which coding a client takes is infra/http/encoding.ts's
// call): assets are compressed once at load; the page is gzipped once too, around the one slot that varies.
import { brotliCompressSync, constants, crc32, deflateRawSync, gzipSync } from 'node:zlib';

export type Coding = 'br' | 'gzip';

export function precompress(body: Buffer): Record<Coding, Buffer> {
  return {
    br: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
    gzip: gzipSync(body, { level: 9 }),
  };
}

/** CRC-32 continued over more bytes. Node 20's zlib.crc32 answers 0 for some empty buffers (seen
 * with Buffer.from('')), so an empty part leaves the running value alone explicitly. */
function crcMore(data: Buffer, value: number): number {
  return data.length === 0 ? value : crc32(data, value);
}

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03]);

/**
 * A page that is static except for one short slot (the caller's address) as gzip, without
 * compressing 20 KB per request: the static parts are deflated once and ended byte-aligned (sync
 * flush), the slot goes in as a stored block, and only the CRC is computed per request (RFC 1951
 * blocks concatenate; RFC 1952 wraps them).
 */
export class SplicedGzip {
  private readonly headText: string;
  private readonly tailText: string;
  private readonly head: Buffer;
  private readonly tail: Buffer;
  private readonly headZ: Buffer;
  private readonly tailZ: Buffer;
  private readonly headCrc: number;

  constructor(head: string, tail: string) {
    this.headText = head;
    this.tailText = tail;
    this.head = Buffer.from(head);
    this.tail = Buffer.from(tail);
    this.headZ = deflateRawSync(this.head, { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
    this.tailZ = deflateRawSync(this.tail, { level: 9 });
    this.headCrc = crcMore(this.head, 0);
  }

  /** The identity body: head + slot + tail. */
  plain(slot: string): string {
    return this.headText + slot + this.tailText;
  }

  gzip(slot: string): Buffer {
    const mid = Buffer.from(slot);
    if (mid.length > 0xffff) throw new RangeError('slot too long for one stored block');
    const stored = Buffer.alloc(5);
    stored.writeUInt8(0, 0); // BFINAL=0, BTYPE=00 (stored); we are byte-aligned after the sync flush
    stored.writeUInt16LE(mid.length, 1);
    stored.writeUInt16LE(~mid.length & 0xffff, 3);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(crcMore(this.tail, crcMore(mid, this.headCrc)), 0);
    trailer.writeUInt32LE((this.head.length + mid.length + this.tail.length) >>> 0, 4);
    return Buffer.concat([GZIP_HEADER, this.headZ, stored, mid, this.tailZ, trailer]);
  }
}

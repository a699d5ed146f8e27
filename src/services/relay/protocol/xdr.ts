// The XDR subset the relay protocol uses (docs/protocols/syncthing-relay.md §4): 4-byte big-endian words,
// and length-prefixed opaque/string data padded with zeros to a 4-byte boundary.

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const pad = (n: number) => (4 - (n % 4)) % 4;

export class XdrWriter {
  private parts: Buffer[] = [];

  uint32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(v >>> 0, 0);
    this.parts.push(b);
  }

  int32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32BE(v | 0, 0);
    this.parts.push(b);
  }

  opaque(data: Buffer): void {
    this.uint32(data.length);
    this.parts.push(data);
    const p = pad(data.length);
    if (p) this.parts.push(Buffer.alloc(p));
  }

  string(s: string): void {
    this.opaque(Buffer.from(s, 'utf8'));
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export class XdrReader {
  private off = 0;

  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  private need(n: number): void {
    if (this.off + n > this.buf.length) throw new ProtocolError('truncated payload');
  }

  uint32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.off);
    this.off += 4;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.off);
    this.off += 4;
    return v;
  }

  /** Length-prefixed bytes; a length over `max` is an error (the Go decoder's <N> bound). */
  opaque(max: number): Buffer {
    const len = this.uint32();
    if (len > max) throw new ProtocolError(`opaque field of ${len} bytes exceeds ${max}`);
    this.need(len);
    const v = Buffer.from(this.buf.subarray(this.off, this.off + len));
    // Padding contents are not checked, but a missing pad is tolerated only at the very end.
    this.off = Math.min(this.buf.length, this.off + len + pad(len));
    return v;
  }

  string(max: number): string {
    return this.opaque(max).toString('utf8');
  }
}

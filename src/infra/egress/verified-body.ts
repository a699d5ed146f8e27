// A body checked against the hash it is known by while it streams through: every byte passes at
// once but the last, which is held back until the whole body matched. A body that does not match
// ends in an error instead of its last byte, so no reader (a client, a cache fill) ever holds a
// complete copy of it.
import { pipeline, type Readable, Transform } from 'node:stream';

/** A running hash of a body and the verdict once it is all in. */
export interface BodyHash {
  update(chunk: Buffer): void;
  matches(): boolean;
}

/** `src` passed through, failing with `mismatch()` at its end unless it matched; an error on either side destroys both. */
export function verifiedBody(src: Readable, hash: BodyHash, mismatch: () => Error): Readable {
  let held: Buffer | null = null;
  const t = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (chunk.length === 0) return cb();
      hash.update(chunk);
      if (held) this.push(held);
      if (chunk.length > 1) this.push(chunk.subarray(0, -1));
      held = chunk.subarray(-1);
      cb();
    },
    flush(cb) {
      if (!hash.matches()) return cb(mismatch());
      if (held) this.push(held);
      cb();
    },
  });
  pipeline(src, t, () => {});
  return t;
}

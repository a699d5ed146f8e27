// Size-capped body reading for anything that arrives from outside (upstream responses, fetched
// diagram text): never holds more than the cap in memory, and refuses with a typed error as soon as
// a declared length or the bytes actually sent pass it, closing the source instead of draining it.
import { pipeline, type Readable, Transform } from 'node:stream';
import { humanBytes } from '../config/schema.ts';

/** The body passed its cap; `limit` is that cap in bytes. */
export class BodyTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number, what = 'body') {
    super(`${what} exceeds ${humanBytes(limit)}`);
    this.name = 'BodyTooLarge';
    this.limit = limit;
  }
}

/** A Node stream: an undici body, an http.IncomingMessage, a file stream. */
export type BodySource = AsyncIterable<Uint8Array> & { destroy(err?: Error): unknown };

export interface CapOptions {
  /** A Content-Length header or number: over the cap means no byte is read at all. */
  declared?: string | string[] | number | undefined;
  /** Names the body in the error message ("upstream response"). */
  what?: string;
}

/**
 * Lets go of a body nobody will read. An undici body destroyed without an error emits one of its
 * own (RequestAbortedError), and with no listener that is an uncaught exception: the process dies.
 */
export function discard(body: BodySource): void {
  const s = body as BodySource & { on?: (event: 'error', fn: () => void) => unknown };
  s.on?.('error', () => {});
  body.destroy();
}

/** The whole body as one Buffer, or BodyTooLarge once more than `max` bytes were declared or sent. */
export async function readCapped(body: BodySource, max: number, o: CapOptions = {}): Promise<Buffer> {
  const declared = Number(Array.isArray(o.declared) ? o.declared[0] : (o.declared ?? Number.NaN));
  if (declared > max) {
    discard(body);
    throw new BodyTooLarge(max, o.what);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      throw new BodyTooLarge(max, o.what);
    }
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
  }
  return Buffer.concat(chunks, size);
}

/**
 * readCapped for a Node stream known to be small (a declared length): listeners instead of an async
 * iterator, one promise per body. A stream that closes before its end fails like an aborted one.
 */
export function readSmall(src: Readable, max: number, what?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: Error) => {
      src.removeListener('data', onData);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        fail(new BodyTooLarge(max, what));
        src.destroy();
      } else chunks.push(chunk);
    };
    src.on('data', onData);
    src.once('error', fail);
    src.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    src.once('close', () => {
      if (!src.readableEnded) fail(new Error('body closed before its end'));
    });
  });
}

/**
 * `src` passed through unbuffered, failing with `tooLarge()` (BodyTooLarge by default) once more
 * than `max` bytes went by; an error on either side destroys both.
 */
export function capStream(
  src: Readable,
  max: number,
  tooLarge: () => Error = () => new BodyTooLarge(max),
): Readable {
  let n = 0;
  const t = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > max) cb(tooLarge());
      else cb(null, chunk);
    },
  });
  pipeline(src, t, () => {});
  return t;
}

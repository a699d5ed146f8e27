// A byte range of an open file as a Readable. Piped into an HTTP response it copies through a small
// pool of reused 512 KiB buffers (one read ahead while the other is written), handing each back
// once the response's write callback says the socket has taken it: no fresh buffer per chunk for the
// garbage collector. Every other consumer (for await, pipeline into a Transform) gets fresh buffers,
// since a Writable may keep the chunks it was given.
import { read } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Writable } from 'node:stream';
import { nodeHttp } from '../http/node-http.ts';

export const READ_CHUNK_BYTES = 512 * 1024;
/** Idle buffers kept for the next download (4 MiB); more are left to the garbage collector. */
const POOL_MAX = 8;
const pool: Buffer[] = [];

// A range shorter than a chunk gets a buffer of its own size when the pool is empty: many small
// transfers at once (cache hits) would otherwise each allocate 512 KiB.
const take = (want: number): Buffer => pool.pop() ?? Buffer.allocUnsafeSlow(Math.min(want, READ_CHUNK_BYTES));
const give = (b: Buffer): void => {
  if (b.length === READ_CHUNK_BYTES && pool.length < POOL_MAX) pool.push(b);
};

export class FileRangeStream extends Readable {
  private readonly fh: FileHandle;
  private pos: number;
  private remaining: number;
  /** A read is on the thread pool: the descriptor must stay open until it returns. */
  private reading = false;
  private afterRead: (() => void) | null = null;
  private fast = false;
  /**
   * Told each chunk's length as it is handed on, whichever way the stream is read: a byte counter
   * (budgets) that, unlike a 'data' listener, leaves the pooled copy into a response in place.
   */
  onBytes: ((n: number) => void) | null = null;

  /** Bytes start..end (inclusive) of `fh`, which the stream closes when it ends or is destroyed. */
  constructor(fh: FileHandle, start: number, end: number) {
    super({ highWaterMark: READ_CHUNK_BYTES });
    this.fh = fh;
    this.pos = start;
    this.remaining = Math.max(0, end - start + 1);
  }

  private readInto(buf: Buffer, done: (n: number) => void): void {
    this.reading = true;
    read(this.fh.fd, buf, 0, Math.min(buf.length, this.remaining), this.pos, (err, n) => {
      this.reading = false;
      const after = this.afterRead;
      this.afterRead = null;
      if (after) return after();
      if (this.destroyed) return;
      if (err) return void this.destroy(err);
      // The file is shorter than the range: it was truncated under us, never a clean end.
      if (n === 0) return void this.destroy(new Error('file ended before its range'));
      this.pos += n;
      this.remaining -= n;
      done(n);
    });
  }

  override _read(): void {
    // copyTo() does the reading: a 'data' listener added later sees no chunk, rather than a race.
    if (this.fast) return;
    if (this.remaining === 0) return void this.push(null);
    const buf = Buffer.allocUnsafeSlow(Math.min(READ_CHUNK_BYTES, this.remaining));
    this.readInto(buf, (n) => {
      this.onBytes?.(n);
      this.push(n === buf.length ? buf : buf.subarray(0, n));
    });
  }

  override pipe<T extends NodeJS.WritableStream>(dest: T, opts?: { end?: boolean }): T {
    const untouched = this.readableFlowing === null && this.readableLength === 0 && !this.readableDidRead;
    if (this.fast || !untouched || !(dest instanceof nodeHttp.ServerResponse)) return super.pipe(dest, opts);
    this.fast = true;
    dest.emit('pipe', this); // as pipe() does: listeners (a byte counter) learn their source
    this.copyTo(dest, opts?.end !== false);
    return dest;
  }

  /** At most one read and one write in flight; a buffer returns to the pool when its write is done. */
  private copyTo(dest: Writable, end: boolean): void {
    let writing = false;
    let ready: Buffer | null = null;
    let readyLen = 0;
    // As pipe() would unpipe: a response closed early (client gone) stops the reads and the file.
    dest.once('close', () => {
      if (!this.readableEnded) this.destroy();
    });
    const step = (): void => {
      if (this.destroyed) return;
      if (ready && !writing) {
        const buf = ready;
        ready = null;
        writing = true;
        this.onBytes?.(readyLen);
        dest.write(readyLen === buf.length ? buf : buf.subarray(0, readyLen), (err) => {
          writing = false;
          // The response failed (client gone): stop, as a pipe would; the response owner reports it.
          // That buffer may not have been released, so it is not reused.
          if (err) return void this.destroy();
          give(buf);
          step();
        });
      }
      if (!ready && !this.reading && this.remaining > 0) {
        const buf = take(this.remaining);
        this.readInto(buf, (n) => {
          ready = buf;
          readyLen = n;
          step();
        });
      }
      if (!ready && !writing && !this.reading && this.remaining === 0) {
        if (end) dest.end();
        this.push(null);
        this.read(0); // emits 'end' (the stream is not flowing), then autoDestroy closes the file
      }
    };
    step();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    const close = () => {
      this.fh.close().then(
        () => cb(err),
        (e: Error) => cb(err ?? e),
      );
    };
    // Closing while the thread pool still reads could hand the number to another open() first.
    if (this.reading) this.afterRead = close;
    else close();
  }
}

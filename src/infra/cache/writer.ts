// A streaming write into the cache: chunks go straight to a temporary file (never buffered whole)
// that the cache publishes as the body once the stream ends. It never errors towards the source,
// so a full disk or an oversized body cannot break the stream it is teed from; `done` tells
// whether the entry was stored.
import { close, open, unlink, writev } from 'node:fs';
import { Writable } from 'node:stream';

/** What the cache lends a writer: where to write, and how to publish the body. */
export interface WriteTarget {
  /** A temporary path, or null when the disk tier is off or unusable. */
  tempPath(): Promise<string | null>;
  /** Largest body the disk tier takes. */
  maxBytes: number;
  /** Publishes the finished body file (it owns the file from here); false when not stored. Never rejects. */
  commit(tmp: string, bodyBytes: number): Promise<boolean>;
  /** The write was given up: release its claim on the key. */
  abandon(err?: unknown): void;
}

type Done = (err?: Error | null) => void;

export class CacheWriter extends Writable {
  /** Resolves true once the entry is stored, false when it was dropped. Never rejects. */
  readonly done: Promise<boolean>;
  /** Body bytes received so far. */
  bytes = 0;
  private settle!: (stored: boolean) => void;
  private fd = -1;
  private tmp: string | null = null;
  private dropped = false;
  private sealed = false;
  /** A write is running on the descriptor: closing it now could let another file reuse the number. */
  private writing = false;
  private afterWrite: (() => void) | null = null;

  private readonly target: WriteTarget;
  private readonly expectedSize: number | undefined;
  constructor(target: WriteTarget, expectedSize?: number) {
    super({ decodeStrings: true });
    this.target = target;
    this.expectedSize = expectedSize;
    this.done = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  /** A writer with nowhere to write (no disk tier): drains its source, stores nothing. */
  static nowhere(): CacheWriter {
    return new CacheWriter({
      tempPath: async () => null,
      maxBytes: 0,
      commit: async () => false,
      abandon: () => {},
    });
  }

  override _construct(cb: Done): void {
    this.target.tempPath().then(
      (tmp) => {
        if (!tmp) this.drop(null, cb);
        else
          open(tmp, 'wx', (err, fd) => {
            if (err) this.drop(err, cb);
            else {
              this.tmp = tmp;
              this.fd = fd;
              cb();
            }
          });
      },
      (err: unknown) => this.drop(err, cb),
    );
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: Done): void {
    this._writev([{ chunk }], cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: Done): void {
    for (const c of chunks) this.bytes += c.chunk.length;
    if (this.dropped) cb();
    else if (this.bytes > this.target.maxBytes) this.drop(null, cb);
    else
      this.append(
        chunks.map((c) => c.chunk),
        (err) => (err ? this.drop(err, cb) : cb()),
      );
  }

  override _final(cb: Done): void {
    // A body shorter or longer than announced is a cut upstream, not an object to keep.
    if (this.dropped || (this.expectedSize !== undefined && this.bytes !== this.expectedSize)) {
      this.drop(null, cb);
      return;
    }
    const fd = this.fd;
    this.fd = -1;
    this.sealed = true; // from here a destroy() leaves the file to the commit
    close(fd, (err) => {
      if (err) {
        this.sealed = false;
        this.drop(err, cb);
      } else {
        this.target.commit(this.tmp!, this.bytes).then((stored) => {
          this.settle(stored);
          cb();
        });
      }
    });
  }

  override _destroy(err: Error | null, cb: Done): void {
    if (this.sealed) cb(err);
    else if (this.writing) this.afterWrite = () => this.drop(null, () => cb(err));
    else this.drop(null, () => cb(err));
  }

  /** One write on the descriptor; a destroy() meanwhile waits for it (see `writing`). */
  private append(bufs: Buffer[], cb: (err: Error | null) => void): void {
    let n = 0;
    for (const b of bufs) n += b.length;
    this.writing = true;
    writev(this.fd, bufs, (err, written) => {
      this.writing = false;
      const destroyed = this.afterWrite;
      this.afterWrite = null;
      cb(err ?? (written === n ? null : new Error('short write to the cache')));
      destroyed?.();
    });
  }

  /** Gives the entry up: closes and removes the temporary file; the stream itself keeps flowing. */
  private drop(err: unknown, cb: () => void): void {
    if (this.dropped) {
      cb();
      return;
    }
    this.dropped = true;
    this.target.abandon(err ?? undefined);
    this.settle(false);
    const fd = this.fd;
    this.fd = -1;
    const tmp = this.tmp;
    const removeTmp = () => (tmp ? unlink(tmp, () => cb()) : cb());
    if (fd >= 0) close(fd, removeTmp);
    else removeTmp();
  }
}

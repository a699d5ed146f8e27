// One body fetched once and read by many while it arrives: the writer appends to a file, any number
// of readers stream byte ranges of it as they are written, and the last byte of the body is held
// back from every reader until the writer seals the body as good (a digest checked, a length
// matched). A reader that keeps up is handed the appended chunks themselves from memory (the latest
// RECENT bytes stay there), so it never waits for the file write nor reads the file back; the writer
// is held back to the pace of the fastest such reader (as a tee would be), but never for long: a
// reader that stops reading is let go after PACE_WAIT_MS and reads the file from then on, until it
// catches up again. A body that fails is never completed for anyone: readers get the error instead
// of the end. The file can then be handed to a cache (Cache.adopt) or removed; open readers keep reading
// from their descriptor either way.
import { close, open, read, unlink, writev } from 'node:fs';
import { Readable } from 'node:stream';

type State = 'writing' | 'sealed' | 'failed';

const RESOLVED = Promise.resolve();

/** Bytes queued for the file before append() makes its caller wait. */
const HIGH_WATER = 4 * 1024 * 1024;

/**
 * Bytes queued before a file write starts. A network body arrives in pieces of 16 KiB or less (a TLS
 * record each); written as they came, that was a thread-pool job and an event-loop wake-up every few
 * pieces (strace of a cold 100 MiB OCI pull, whole process: 5 000-6 700 futex calls and 3 500-4 100
 * writes and writevs before, about 3 000 and 2 300 with the batch). The readers that keep up take
 * the bytes from memory, and a batch is a quarter of what memory keeps, so holding it back from the
 * file costs them nothing.
 */
const WRITE_BATCH = 256 * 1024;

/** Longest a queue smaller than WRITE_BATCH waits for more bytes before it is written anyway. */
const WRITE_DELAY_MS = 20;

/** Bytes each reader reads from the file per step. */
const READ_CHUNK = 256 * 1024;

/** Bytes of the latest appended chunks kept in memory for the readers that keep up. */
const RECENT = 1024 * 1024;

/**
 * How far the writer may get ahead of its fastest reader: half the bytes kept in memory, so that
 * reader still finds the bytes it needs there after the writer's next chunk.
 */
const LEAD = RECENT / 2;

/** Longest the writer waits for its fastest reader to come back within LEAD bytes of it. */
const PACE_WAIT_MS = 1000;

/** A piece from memory shorter than this is sent together with what follows it (one copy, one write). */
const MERGE = 4096;

export class Spool {
  readonly path: string;
  /** Bytes in the file so far (appended and written). */
  written = 0;
  /** Bytes appended so far (in the file or queued for it). */
  private appended = 0;
  /** The latest appended chunks, oldest first, and the body offset of each. */
  private recent: { at: number; buf: Buffer }[] = [];
  private recentBytes = 0;
  /** Where each open reader is; `paces` while it reads from memory (and has not been let go). */
  private cursors = new Set<{ pos: number; paces: boolean }>();
  /** The writer waiting for its fastest reader, if it is. */
  private pacing: { done: Promise<void>; resolve: () => void; timer: NodeJS.Timeout } | null = null;
  private state: State = 'writing';
  private failure: Error | null = null;
  /** Readers waiting for more bytes (or the seal, or a failure): each called once, on the next progress. */
  private waiting: (() => void)[] = [];
  private wfd: number;
  private rfd: number;
  private readers = 0;
  private writerDone = false;

  /** The body's length when known up front: only its very last byte is then held back. */
  private readonly size: number | null;

  private constructor(path: string, wfd: number, rfd: number, size: number | null) {
    this.path = path;
    this.size = size;
    this.wfd = wfd;
    this.rfd = rfd;
  }

  /**
   * Creates the file (it must not exist) and opens it for appending and for the readers. With the
   * body's `size`, appends past it are refused and readers get every byte but the body's last one
   * as soon as it is there; without, the last byte appended so far is held back.
   */
  static async create(path: string, o: { size?: number | null } = {}): Promise<Spool> {
    const wfd = await new Promise<number>((res, rej) => open(path, 'wx', (e, fd) => (e ? rej(e) : res(fd))));
    const rfd = await new Promise<number>((res, rej) =>
      open(path, 'r', (e, fd) => {
        if (e) {
          close(wfd, () => {});
          unlink(path, () => {});
          rej(e);
        } else res(fd);
      }),
    );
    return new Spool(path, wfd, rfd, o.size ?? null);
  }

  get sealed(): boolean {
    return this.state === 'sealed';
  }

  get failed(): boolean {
    return this.state === 'failed';
  }

  /**
   * Queues a chunk for the file. Chunks that arrive while a write runs go out together in the next
   * one (one writev instead of a thread-pool job per network chunk); the promise resolves at once
   * unless more than HIGH_WATER bytes wait, so a fast source is held back, never buffered without end,
   * or unless the fastest reader that keeps up is more than LEAD bytes behind (see pace()).
   */
  append(chunk: Buffer): Promise<void> {
    if (this.state !== 'writing') return Promise.reject(new Error('spool is closed for writing'));
    if (this.writeError) return Promise.reject(this.writeError);
    if (chunk.length === 0) return Promise.resolve();
    if (this.size !== null && this.appended + chunk.length > this.size)
      return Promise.reject(new Error('spool appended past its stated size'));
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.recent.push({ at: this.appended, buf: chunk });
    this.appended += chunk.length;
    this.recentBytes += chunk.length;
    // The newest chunk always stays, however large.
    while (this.recent.length > 1 && this.recentBytes - (this.recent[0]?.buf.length ?? 0) >= RECENT)
      this.recentBytes -= this.recent.shift()?.buf.length ?? 0;
    this.flush();
    // Readers waiting at the end take the new bytes from memory now.
    this.progress();
    const paced = this.pace();
    if (this.queued < HIGH_WATER) return paced;
    const written = new Promise<void>((resolve, reject) =>
      this.waiters.push({ resolve, reject, below: HIGH_WATER }),
    );
    return paced === RESOLVED ? written : Promise.all([written, paced]).then(() => {});
  }

  /**
   * Resolves once the fastest reader that reads from memory is within LEAD bytes of the end, or at
   * once without such a reader. After PACE_WAIT_MS the readers still behind are let go: they no
   * longer hold the writer back (a client that stalls does not stall the fetch for everyone).
   */
  private pace(): Promise<void> {
    if (!this.behind()) return RESOLVED;
    if (this.pacing) return this.pacing.done;
    let resolve = () => {};
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    const timer = setTimeout(() => {
      for (const c of this.cursors) if (this.appended - c.pos > LEAD) c.paces = false;
      this.pacing = null;
      resolve();
    }, PACE_WAIT_MS);
    this.pacing = { done, resolve, timer };
    return done;
  }

  /** Some reader paces the writer and the fastest of them is more than LEAD bytes behind. */
  private behind(): boolean {
    let lead = -1;
    for (const c of this.cursors) if (c.paces && c.pos > lead) lead = c.pos;
    return lead >= 0 && this.appended - lead > LEAD;
  }

  /** A reader moved on (or left): the writer waiting for it goes on once it no longer needs to. */
  private moved(): void {
    const p = this.pacing;
    if (!p || this.behind()) return;
    clearTimeout(p.timer);
    this.pacing = null;
    p.resolve();
  }

  /** Resolves once every appended byte is in the file (before a seal). */
  drain(): Promise<void> {
    if (this.writeError) return Promise.reject(this.writeError);
    if (this.queued === 0) return Promise.resolve();
    const drained = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject, below: 1 }));
    // A waiter makes the queue due now, however small.
    this.flush();
    return drained;
  }

  private queue: Buffer[] = [];
  private queued = 0;
  private writing = false;
  private writeError: Error | null = null;
  private waiters: { resolve: () => void; reject: (e: Error) => void; below: number }[] = [];
  /** Set when a small queue has waited WRITE_DELAY_MS: it is written as it is. */
  private due = false;
  private dueTimer: NodeJS.Timeout | null = null;

  /** Starts the next file write, if none runs and the queue is due (see WRITE_BATCH). */
  private flush(): void {
    if (this.writing || this.queue.length === 0 || this.wfd < 0) return;
    if (!this.due && this.queued < WRITE_BATCH && this.waiters.length === 0) {
      this.dueTimer ??= setTimeout(() => {
        this.dueTimer = null;
        this.due = true;
        this.flush();
      }, WRITE_DELAY_MS).unref();
      return;
    }
    this.due = false;
    if (this.dueTimer) {
      clearTimeout(this.dueTimer);
      this.dueTimer = null;
    }
    this.writing = true;
    const bufs = this.queue;
    this.queue = [];
    writev(this.wfd, bufs, (err, n) => {
      this.writing = false;
      if (this.writerDone) {
        // Failed meanwhile: nothing more is written.
        this.closeWriter();
        return;
      }
      if (err) {
        this.writeError = err;
        for (const w of this.waiters.splice(0)) w.reject(err);
        return;
      }
      this.written += n;
      this.queued -= n;
      // A short write (rare on a regular file): the rest goes first in the next one.
      let total = 0;
      for (const b of bufs) total += b.length;
      if (n < total) {
        let skip = n;
        const rest: Buffer[] = [];
        for (const b of bufs) {
          if (skip >= b.length) skip -= b.length;
          else {
            rest.push(skip ? b.subarray(skip) : b);
            skip = 0;
          }
        }
        this.queue = [...rest, ...this.queue];
      }
      this.progress();
      this.waiters = this.waiters.filter((w) => {
        if (this.queued >= w.below) return true;
        w.resolve();
        return false;
      });
      this.flush();
    });
  }

  /** Wakes the readers waiting for progress (a reader that must wait again queues itself anew). */
  private progress(): void {
    if (this.waiting.length === 0) return;
    const w = this.waiting;
    this.waiting = [];
    for (const f of w) f();
  }

  /** The body is complete and good: readers may read to its end. */
  seal(): void {
    if (this.state !== 'writing') return;
    if (this.queued > 0 || this.writing) throw new Error('spool sealed before drain()');
    this.state = 'sealed';
    this.closeWriter();
    this.progress();
  }

  /** The body is bad or cut: every reader fails with `err`, now or when it next waits. */
  fail(err: Error): void {
    if (this.state !== 'writing') return;
    this.state = 'failed';
    this.queue = [];
    this.recent = [];
    this.recentBytes = 0;
    this.cursors.clear();
    this.moved();
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.failure = err;
    this.closeWriter();
    this.progress();
    this.maybeClose();
  }

  /**
   * Keeps the file open for a reader about to be made (a caller that first waits for the seal):
   * call the returned function once the reader exists or is not needed.
   */
  hold(): () => void {
    this.readers++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.readers--;
      this.maybeClose();
    };
  }

  /**
   * Streams bytes `start`..`end` (inclusive; `end` undefined = to the end of the body) as they are
   * written. Until the spool is sealed the last byte written is never sent, so no reader sees a
   * whole body that was not found good.
   */
  reader(start: number, end?: number): Readable {
    this.readers++;
    // A reader that starts within the bytes kept in memory paces the writer from the start: the
    // first client's reader is made while the fetch already runs, and its stream starts flowing
    // only once the answer's headers went out. Pacing only from its first read from memory, it
    // could be left behind the memory by a fast source meanwhile and read the whole body back from
    // the file (an in-process source did, every byte of it).
    const cursor = {
      pos: start,
      paces: this.state === 'writing' && start >= (this.recent[0]?.at ?? this.appended),
    };
    this.cursors.add(cursor);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.readers--;
      this.cursors.delete(cursor);
      this.moved();
      this.maybeClose();
    };
    const stream = new Readable({
      highWaterMark: READ_CHUNK,
      read: () => {
        const step = () => {
          if (this.state === 'failed') {
            stream.destroy(this.failure ?? new Error('spool failed'));
            return;
          }
          const sealed = this.state === 'sealed';
          const last = end ?? (sealed ? this.written - 1 : Number.POSITIVE_INFINITY);
          if (cursor.pos > last) {
            cursor.paces = false;
            stream.push(null);
            return;
          }
          // Readable now: everything appended, less the held-back last byte while unsealed.
          const limit = Math.min(last + 1, sealed ? this.appended : this.unsealedLimit());
          if (cursor.pos >= limit) {
            if (sealed) {
              // Sealed shorter than the range asked for: the caller's range was wrong.
              stream.destroy(new Error('range past the end of the body'));
              return;
            }
            this.waiting.push(step);
            return;
          }
          const mem = this.fromMemory(cursor.pos, limit);
          if (mem) {
            cursor.pos += mem.length;
            cursor.paces = true;
            stream.push(mem);
            this.moved();
            return;
          }
          // Behind the bytes kept in memory: from the file, as far as it is written.
          const n = Math.min(READ_CHUNK, Math.min(limit, this.written) - cursor.pos);
          if (n <= 0) {
            this.waiting.push(step);
            return;
          }
          const buf = Buffer.allocUnsafe(n);
          read(this.rfd, buf, 0, n, cursor.pos, (err, got) => {
            if (err) return stream.destroy(err);
            if (got === 0) return stream.destroy(new Error('spool file shorter than written'));
            cursor.pos += got;
            stream.push(got === n ? buf : buf.subarray(0, got));
            this.moved();
          });
        };
        step();
      },
      destroy: (err, cb) => {
        release();
        cb(err);
      },
    });
    stream.once('end', release);
    return stream;
  }

  /** Bytes a reader may have before the seal: all appended but the body's (or the latest) last byte. */
  private unsealedLimit(): number {
    return this.size === null ? this.appended - 1 : Math.min(this.appended, this.size - 1);
  }

  /**
   * Bytes from `pos` (before `limit`) out of the chunks kept in memory, or null when `pos` is older
   * than they are. No copy, unless a short piece is joined with what follows it.
   */
  private fromMemory(pos: number, limit: number): Buffer | null {
    const r = this.recent;
    const first = r[0];
    if (!first || pos < first.at) return null;
    // A reader that keeps up is near the end: look from there.
    let i = r.length - 1;
    while (i > 0 && (r[i]?.at ?? 0) > pos) i--;
    const pieces: Buffer[] = [];
    let size = 0;
    for (; i < r.length && size < MERGE; i++) {
      const c = r[i] as { at: number; buf: Buffer };
      if (c.at >= limit) break;
      const from = pos + size - c.at;
      const piece = c.buf.subarray(from, Math.min(c.buf.length, limit - c.at));
      pieces.push(piece);
      size += piece.length;
    }
    if (size === 0) return null;
    return pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, size);
  }

  /** The writer is done with the file (sealed or failed) and hands it on: no more appends. */
  private closeWriter(): void {
    this.writerDone = true;
    if (this.dueTimer) {
      clearTimeout(this.dueTimer);
      this.dueTimer = null;
    }
    // A write still running closes the descriptor when it returns (never under its feet).
    if (this.writing) return;
    const fd = this.wfd;
    this.wfd = -1;
    if (fd >= 0) close(fd, () => {});
  }

  /** Closes the readers' descriptor once the body is settled and nobody reads it any more. */
  private maybeClose(): void {
    if (!this.writerDone || this.readers > 0 || this.rfd < 0) return;
    // A sealed spool may get new readers until its owner stops handing them out (see done()).
    if (this.state === 'sealed' && !this.finished) return;
    const fd = this.rfd;
    this.rfd = -1;
    close(fd, () => {});
  }

  private finished = false;

  /** The owner hands out no more readers: the descriptor closes after the last one ends. */
  done(): void {
    this.finished = true;
    this.maybeClose();
  }

  /** Removes the file (a failed body, or one nobody keeps); open readers are unaffected. */
  remove(): Promise<void> {
    return new Promise((r) => unlink(this.path, () => r()));
  }
}

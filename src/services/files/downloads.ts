// Max-Downloads at download time: which requests take a count, which are refused, and when a file
// that reached its limit is deleted. The rule (docs/files.md "Lifetimes"):
// - a GET that starts sending the body of the file (no Range, or a Range from byte 0) takes one
//   download; past the limit it answers 404 and the file is deleted;
// - a Range from a later byte continues a download already counted and takes none (it counts as a
//   new one if nothing was counted yet); continuations are served for resumeGraceSec after the last
//   allowed download started;
// - HEAD, 304 and 416 never count (no body); they answer 404 once no download remains;
// - the file is deleted as soon as the last allowed download has sent its final byte, else by the
//   lazy check of any later request or the sweeper once the grace is over.
import { AppError, notFound, unavailable } from '../../errors.ts';
import { type DownloadCounter, type DownloadState, pastLimits } from './lifetime.ts';
import type { FileStore, StoredFile } from './store.ts';

export type DownloadKind = 'peek' | 'new' | 'continue';

export interface Admission {
  /** Downloads left after this one (null: no Max-Downloads). */
  remaining: number | null;
  /** This request is (part of) the last allowed download: delete the file once it sent the final byte. */
  last: boolean;
}

export class DownloadLimits {
  private readonly files: FileStore;
  private readonly counter: DownloadCounter;
  private readonly graceMs: number;
  constructor(files: FileStore, counter: DownloadCounter, graceMs: number) {
    this.files = files;
    this.counter = counter;
    this.graceMs = graceMs;
  }

  private counterId(f: StoredFile): string {
    return `${f.key}:${f.lifetime?.id ?? ''}`;
  }

  /** When the counter may be dropped: the file's Max-Days or retention end, whichever is first. */
  private forgetAt(f: StoredFile): number | null {
    const ends = [f.lifetime?.expiresAt ?? null, this.files.retentionEnd(f)].filter(
      (t): t is number => t !== null,
    );
    return ends.length ? Math.min(...ends) + this.graceMs : null;
  }

  /** Lets a request have the file or throws 404 (deleting the file when it is past its limits). */
  async admit(f: StoredFile, kind: DownloadKind): Promise<Admission> {
    const l = f.lifetime;
    if (!l || l.maxDownloads === null) return { remaining: null, last: false };
    const now = this.files.now();
    let s: DownloadState;
    try {
      s = await this.counter.peek(this.counterId(f));
      if (kind === 'new' || (kind === 'continue' && s.count === 0))
        s = await this.counter.take(this.counterId(f), now, this.forgetAt(f));
    } catch (err) {
      // Never served uncounted: the uploader asked for at most N downloads.
      if (err instanceof AppError) throw err;
      throw unavailable('download counter unavailable, try again shortly', 5, 'COUNTER_UNAVAILABLE', {
        cause: err,
      });
    }
    if (pastLimits(l, s, now, this.graceMs)) {
      await this.expire(f);
      throw notFound('no file with this key');
    }
    const remaining = Math.max(0, l.maxDownloads - s.count);
    if (kind === 'peek' && remaining === 0) throw notFound('no file with this key');
    return { remaining, last: remaining === 0 };
  }

  /** Deletes the file version `f` and its counter (a replacement uploaded meanwhile is kept). */
  async expire(f: StoredFile): Promise<void> {
    await this.files.removeVersion(f);
    if (f.lifetime) await this.counter.forget(this.counterId(f));
  }

  /** Deletes every file past its limits (Max-Days, or downloads used up and the grace over). */
  async sweep(): Promise<number> {
    let n = 0;
    for await (const f of this.files.limited()) {
      const s = await this.counter.peek(this.counterId(f));
      if (f.lifetime && pastLimits(f.lifetime, s, this.files.now(), this.graceMs)) {
        await this.expire(f);
        n++;
      }
    }
    return n;
  }
}

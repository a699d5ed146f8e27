// Max-Downloads at download time: which requests take a count, which are refused, and when a file
// that reached its limit is deleted. The rule (docs/files.md "Lifetimes"):
// - a GET that starts sending the body of the file (no Range, or a Range from byte 0) takes one
//   download; when none is left it answers 404 (the file stays for the downloads under way);
// - a Range from a later byte continues a download of the same client (its client key) that was
//   counted within resumeGraceSec and takes none; from any other client it is a new download;
// - HEAD, 304 and 416 never count (no body); they answer 404 once no download remains, except to a
//   client whose download is under way;
// - the body is opened before the count is taken, so a counted download always has its bytes even
//   if the last one finishes first and deletes the file;
// - the file is deleted once every allowed download has sent its final byte, else by the lazy check
//   of any later request or the sweeper once the grace after the last one is over.
import { AppError, notFound, unavailable } from '../../infra/http/errors.ts';
import type { DownloadCounter, DownloadState } from './download-counter.ts';
import type { Lifetime } from './lifetime.ts';
import type { FileStore, StoredFile } from './store.ts';

export type DownloadKind = 'peek' | 'new' | 'continue';

export interface Admission {
  /** Downloads left after this one (null: no Max-Downloads). */
  remaining: number | null;
  /** This request is one of the counted downloads (or continues one): call finish() after its final byte. */
  tracked: boolean;
}

/** Whether a file is past its limits: Max-Days passed, or every download used and done or its grace over. */
export function usedUp(l: Lifetime, s: DownloadState, now: number): boolean {
  if (l.expiresAt !== null && now >= l.expiresAt) return true;
  if (l.maxDownloads === null || s.count < l.maxDownloads) return false;
  return s.done >= l.maxDownloads || !s.inGrace;
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

  /**
   * How long the counters must live: until the file's Max-Days or retention end (whichever is
   * first) and the grace after it, counted from now by the files clock; null = as long as the file.
   */
  private lifeMs(f: StoredFile): number | null {
    const ends = [f.lifetime?.expiresAt ?? null, this.files.retentionEnd(f)].filter(
      (t): t is number => t !== null,
    );
    return ends.length ? Math.min(...ends) + this.graceMs - this.files.now() : null;
  }

  /** Lets `client` have the file or throws 404 (deleting the file when it is past its limits). */
  async admit(f: StoredFile, kind: DownloadKind, client: string): Promise<Admission> {
    const l = f.lifetime;
    if (!l || l.maxDownloads === null) return { remaining: null, tracked: false };
    const max = l.maxDownloads;
    const now = this.files.now();
    const id = this.counterId(f);
    let out: Admission | null;
    try {
      const s = await this.counter.peek(id, now);
      if (usedUp(l, s, now)) {
        await this.expire(f);
        throw notFound('no file with this key');
      }
      const holder = s.count > 0 && (await this.counter.holds(id, client, now));
      if (kind === 'peek')
        out = s.count < max || holder ? { remaining: Math.max(0, max - s.count), tracked: false } : null;
      else if (kind === 'continue' && holder) out = { remaining: Math.max(0, max - s.count), tracked: true };
      else {
        const n = await this.counter.take(id, max, client, now, this.lifeMs(f));
        out = n === null ? null : { remaining: max - n, tracked: true };
      }
    } catch (err) {
      // Never served uncounted: the uploader asked for at most N downloads.
      if (err instanceof AppError) throw err;
      throw unavailable('download counter unavailable, try again shortly', 5, 'COUNTER_UNAVAILABLE', {
        cause: err,
      });
    }
    if (!out) throw notFound('no file with this key');
    return out;
  }

  /** A tracked download sent the final byte: the file goes once every allowed download did. */
  async finish(f: StoredFile): Promise<void> {
    const max = f.lifetime?.maxDownloads;
    if (max == null) return;
    if ((await this.counter.finished(this.counterId(f), this.lifeMs(f))) >= max) await this.expire(f);
  }

  /** Deletes the file version `f` and its counters (a replacement uploaded meanwhile is kept). */
  async expire(f: StoredFile): Promise<void> {
    await this.files.removeVersion(f);
    if (f.lifetime) await this.counter.close(this.counterId(f));
  }

  /** Deletes every file past its limits (Max-Days, or downloads used up and done or the grace over). */
  async sweep(): Promise<number> {
    let n = 0;
    for await (const f of this.files.limited()) {
      const s = await this.counter.peek(this.counterId(f), this.files.now());
      if (f.lifetime && usedUp(f.lifetime, s, this.files.now())) {
        await this.expire(f);
        n++;
      }
    }
    return n;
  }
}

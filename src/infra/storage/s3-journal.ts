// The S3 multipart uploads this process has in flight, one small file each under
// <dataDir>/s3-uploads/<host>/<pid>-<id>.json, written before the first part is sent and removed
// when the upload completes or is aborted. What a process killed with -9 leaves there names exactly
// the uploads it orphaned, so the next start on this node aborts them at once instead of leaving
// them (billed, invisible to listings) until the safe age lets the sweeper take them. The host name
// keeps nodes that share a data directory apart; the pid, checked for life, keeps cluster workers
// apart (a live one's uploads are its own business).
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { alive } from './trailer-file.ts';

export interface JournalEntry {
  key: string;
  uploadId: string;
}

const NAME = /^(\d+)-[0-9a-f]{32}\.json$/;

export class UploadJournal {
  readonly dir: string;
  private made: Promise<unknown> | undefined;
  /** A failed write is logged once: the safe-age sweep still covers what is not journaled. */
  private failing = false;
  private readonly log: Pick<Logger, 'warn'> | undefined;

  constructor(root: string, log?: Pick<Logger, 'warn'>) {
    this.dir = join(root, hostname().replace(/[^A-Za-z0-9._-]/g, '_') || 'host');
    this.log = log;
  }

  private file(uploadId: string, pid = process.pid): string {
    const id = createHash('sha256').update(uploadId).digest('hex').slice(0, 32);
    return join(this.dir, `${pid}-${id}.json`);
  }

  /** Records an upload just created; resolves once it is on disk (before any part is sent). */
  async begin(e: JournalEntry): Promise<void> {
    try {
      this.made ??= mkdir(this.dir, { recursive: true });
      await this.made;
      await writeFile(this.file(e.uploadId), JSON.stringify(e));
      this.failing = false;
    } catch (err) {
      this.made = undefined;
      if (!this.failing)
        this.log?.warn(
          { err, dir: this.dir },
          's3 upload journal not written: an orphan waits for the safe age',
        );
      this.failing = true;
    }
  }

  /** Forgets an upload that completed or was aborted. */
  async end(uploadId: string): Promise<void> {
    await unlink(this.file(uploadId)).catch(() => {});
  }

  /**
   * The uploads of processes of this node that are gone. Call it at start-up, before this process
   * begins any upload: entries under its own pid are then an earlier process's (a container's pid
   * 1 after a restart). A pid taken by an unrelated live process hides its entries: they are left
   * to the safe-age sweep.
   */
  async *orphans(): AsyncGenerator<{ entry: JournalEntry; file: string }> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of names) {
      const pid = Number(NAME.exec(name)?.[1]);
      if (!pid || (pid !== process.pid && alive(pid))) continue;
      const file = join(this.dir, name);
      let entry: JournalEntry | null = null;
      try {
        const v = JSON.parse(await readFile(file, 'utf8')) as Partial<JournalEntry>;
        if (typeof v.key === 'string' && typeof v.uploadId === 'string')
          entry = { key: v.key, uploadId: v.uploadId };
      } catch {
        // torn by the kill: nothing to abort by it
      }
      if (entry) yield { entry, file };
      else await this.drop(file);
    }
  }

  async drop(file: string): Promise<void> {
    await unlink(file).catch(() => {});
  }
}

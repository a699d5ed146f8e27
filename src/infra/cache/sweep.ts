// What the cache's disk tier removes behind its index: body files of replaced or evicted entries
// (at once, or after a grace while a front proxy may still be sending them) and, on a directory
// scan, bodies no record names. Also the scan's view of which entries are whole.
import { renameSync } from 'node:fs';
import { readFile, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { bodyPath, listFiles, metaPath } from './entry-file.ts';

/**
 * A body no record names (a crash between a write's two renames, a replacement by a sibling
 * process) is removed by a scan once this old: younger, it may be a sibling's publish under way.
 */
const ORPHAN_MS = 60 * 1000;

export interface LiveEntry {
  version: string;
  /** Body and record bytes. */
  bytes: number;
  /** The record's modification time (recency of entries adopted from disk). */
  mtime: number;
}

export class BodyRetirer {
  private readonly dir: string;
  private readonly graceMs: number;
  private readonly trashName: () => string;
  private readonly onError: (err: unknown) => void;
  /** Retired bodies still readable, by path, with when to remove them (insertion = time order). */
  private kept = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  /** `trashName`: a temporary path on the same file system (the tier's tmp/, which must exist). */
  constructor(dir: string, graceMs: number, trashName: () => string, onError: (err: unknown) => void) {
    this.dir = dir;
    this.graceMs = graceMs;
    this.trashName = trashName;
    this.onError = onError;
  }

  /**
   * Removes a body file no record names any more. Its name is never reused, so an open handle, or
   * a front proxy told to send it a moment ago, still reads the whole old version: with a grace,
   * the file stays under its name that long.
   */
  retire(h: string, version: string): void {
    const path = join(this.dir, bodyPath(h, version));
    if (this.graceMs > 0) {
      this.kept.set(path, Date.now() + this.graceMs);
      this.timer ??= setTimeout(() => this.reap(), this.graceMs).unref();
      return;
    }
    // Out of the directory at once (what a scan sees), deleted in the background.
    const trash = this.trashName();
    try {
      renameSync(path, trash);
      void rm(trash, { force: true }).catch(this.onError);
    } catch {
      /* already gone */
    }
  }

  private reap(): void {
    this.timer = null;
    const now = Date.now();
    for (const [path, at] of this.kept) {
      if (at > now) {
        this.timer = setTimeout(() => this.reap(), at - now).unref();
        return;
      }
      this.kept.delete(path);
      void unlink(path).catch(() => {});
    }
  }

  /**
   * Lists the directory: the whole entries (a record and the body it names) by hash. Bodies no
   * record names are removed once old enough, unless still kept for their grace.
   */
  async scan(): Promise<Map<string, LiveEntry>> {
    const found = await listFiles(this.dir);
    const now = Date.now();
    const live = new Map<string, LiveEntry>();
    for (const [h, f] of found) {
      // One record and one body: an entry. Otherwise ask the record which body is live (also when
      // the listing missed a record being renamed over: readdir need not show it).
      let version: string | null = null;
      if (f.meta && f.bodies.size === 1) version = [...f.bodies.keys()][0] ?? null;
      else if (f.bodies.size > 0) version = await this.recordVersion(h).catch(() => null);
      const body = version ? f.bodies.get(version) : undefined;
      for (const [v, b] of f.bodies) {
        const path = join(this.dir, bodyPath(h, v));
        if (v !== version && now - b.mtime > ORPHAN_MS && !this.kept.has(path))
          await unlink(path).catch(() => {});
      }
      if (f.meta && body && version)
        live.set(h, { version, bytes: f.meta.bytes + body.bytes, mtime: f.meta.mtime });
    }
    return live;
  }

  /** The body version a record names. */
  private async recordVersion(h: string): Promise<string | null> {
    const file = await readFile(join(this.dir, metaPath(h))).catch(() => null);
    const r = file && (JSON.parse(file.toString('utf8') || 'null') as { v?: unknown } | null);
    return typeof r?.v === 'string' ? r.v : null;
  }
}

// Rendered avatars: a byte-budgeted in-memory LRU in front of a disk cache under the data directory.
// Keys name the source version, size and format, so an entry never goes stale: a new upload or a
// refreshed mirror copy simply makes a new key. The disk is pruned oldest-first over its budget.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ByteLru } from '../../infra/lru.ts';

/** Least-recently-used map of buffers with a total byte budget. */
export class MemoryLru extends ByteLru<Buffer> {
  constructor(budget: number) {
    super(budget, (b) => b.length);
  }
}

/** Files under one directory, two-level fan-out by key digest, written atomically. */
export class DiskCache {
  private written = 0;
  private pending = new Set<Promise<void>>();
  private pruning: Promise<void> | null = null;

  readonly dir: string;
  private readonly budget: number;
  private readonly onError: (err: unknown) => void;
  constructor(dir: string, budget: number, onError: (err: unknown) => void) {
    this.dir = dir;
    this.budget = budget;
    this.onError = onError;
  }

  pathOf(key: string): string {
    const d = createHash('sha256').update(key).digest('hex');
    return join(this.dir, d.slice(0, 2), d.slice(2));
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.pathOf(key));
    } catch {
      return null;
    }
  }

  /** Writes in the background; idle() waits for them (so a clean shutdown keeps its renders). */
  set(key: string, value: Buffer): Promise<void> {
    const p = this.write(key, value).finally(() => this.pending.delete(p));
    this.pending.add(p);
    return p;
  }

  private async write(key: string, value: Buffer): Promise<void> {
    if (this.budget === 0) return;
    const path = this.pathOf(key);
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(tmp, value);
      await rename(tmp, path);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      this.onError(err);
      return;
    }
    this.written += value.length;
    // Scanning the tree is the expensive part: only after a tenth of the budget was written again.
    if (this.written > this.budget / 10 && !this.pruning) {
      this.written = 0;
      this.pruning = prune(this.dir, this.budget)
        .catch(this.onError)
        .finally(() => {
          this.pruning = null;
        });
    }
  }

  /** Waits for pending writes and a running prune (shutdown, tests). */
  async idle(): Promise<void> {
    await Promise.all(this.pending);
    await this.pruning;
  }
}

/** Deletes the oldest files (by mtime) until the tree holds at most 90% of `budget` bytes. */
export async function prune(dir: string, budget: number): Promise<void> {
  const files: { path: string; size: number; mtime: number }[] = [];
  let total = 0;
  let subdirs: string[];
  try {
    subdirs = await readdir(dir);
  } catch {
    return;
  }
  for (const sub of subdirs) {
    let names: string[];
    try {
      names = await readdir(join(dir, sub));
    } catch {
      continue;
    }
    for (const name of names) {
      const path = join(dir, sub, name);
      try {
        const st = await stat(path);
        files.push({ path, size: st.size, mtime: st.mtimeMs });
        total += st.size;
      } catch {}
    }
  }
  if (total <= budget) return;
  files.sort((a, b) => a.mtime - b.mtime);
  for (const f of files) {
    if (total <= budget * 0.9) break;
    await unlink(f.path).catch(() => {});
    total -= f.size;
  }
}

// The cache's disk layer: one data file and one JSON sidecar per object under a sharded directory,
// an in-memory LRU index rebuilt from disk at start-up, and size-bounded eviction.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Entry {
  key: string;
  size: number;
  /** Relayed response headers (content-type, etag, last-modified, ...). */
  headers: Record<string, string>;
  /** When the object was stored or last revalidated (ms). */
  checkedAt: number;
}

export class CacheStore {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private index = new Map<string, Entry>();
  total = 0;

  readonly dir: string;
  readonly maxBytes: number;
  constructor(dir: string, maxBytes: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    mkdirSync(join(dir, 'tmp'), { recursive: true });
    rmSync(join(dir, 'tmp'), { recursive: true, force: true });
    mkdirSync(join(dir, 'tmp'), { recursive: true });
    this.load();
  }

  static id(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  path(key: string): string {
    const id = CacheStore.id(key);
    return join(this.dir, id.slice(0, 2), id);
  }

  tempPath(): string {
    return join(this.dir, 'tmp', `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  }

  get(key: string): Entry | undefined {
    const e = this.index.get(key);
    if (!e) return undefined;
    this.index.delete(key);
    this.index.set(key, e);
    return e;
  }

  /** Moves a finished temp file into place and records it; evicts until under the bound. */
  commit(tmp: string, e: Entry): void {
    const file = this.path(e.key);
    mkdirSync(join(file, '..'), { recursive: true });
    this.drop(e.key);
    renameSync(tmp, file);
    writeFileSync(`${file}.json`, JSON.stringify(e));
    this.index.set(e.key, e);
    this.total += e.size;
    this.evict();
  }

  touch(e: Entry): void {
    e.checkedAt = Date.now();
    try {
      writeFileSync(`${this.path(e.key)}.json`, JSON.stringify(e));
    } catch {
      this.drop(e.key);
    }
  }

  /** Called whenever an object leaves the store (replaced, evicted, invalidated). */
  onDrop: (key: string) => void = () => {};

  drop(key: string): void {
    this.onDrop(key);
    const e = this.index.get(key);
    if (e) {
      this.index.delete(key);
      this.total -= e.size;
    }
    const file = this.path(key);
    rmSync(file, { force: true });
    rmSync(`${file}.json`, { force: true });
  }

  private evict(): void {
    for (const key of this.index.keys()) {
      if (this.total <= this.maxBytes) break;
      this.drop(key);
    }
  }

  private load(): void {
    const found: { e: Entry; mtime: number }[] = [];
    for (const shard of readdirSync(this.dir)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of readdirSync(join(this.dir, shard))) {
        if (!name.endsWith('.json')) continue;
        const meta = join(this.dir, shard, name);
        try {
          const e = JSON.parse(readFileSync(meta, 'utf8')) as Entry;
          const st = statSync(meta.slice(0, -5));
          if (st.size !== e.size) throw new Error('size mismatch');
          found.push({ e, mtime: st.mtimeMs });
        } catch {
          rmSync(meta, { force: true });
          rmSync(meta.slice(0, -5), { force: true });
        }
      }
    }
    found.sort((a, b) => a.mtime - b.mtime);
    for (const { e } of found) {
      this.index.set(e.key, e);
      this.total += e.size;
    }
    this.evict();
  }
}

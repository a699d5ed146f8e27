// Two cache tiers for processed images: an in-memory LRU bounded by bytes and a disk LRU under the
// data directory (survives restarts). Keys are hashed, so no request text reaches a file name.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ByteLru } from '../../infra/lru.ts';

export interface Cached {
  body: Buffer;
  /** Small JSON-safe facts stored with the bytes (content type, size, id...). */
  meta: Record<string, string | number>;
}

/** Byte-bounded LRU of processed images (256 bytes of bookkeeping counted per entry). */
export class MemoryLru extends ByteLru<Cached> {
  constructor(maxBytes: number) {
    super(maxBytes, (v) => v.body.length + 256);
  }
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 40);

/**
 * Files `<dir>/<ab>/<hash>`: 4-byte meta length, meta JSON, body. Written to a temp name and
 * renamed, so a crash never leaves a half file under a real name. The index of sizes is rebuilt
 * from the directory at start (oldest mtime first) and evicted in LRU order.
 */
export class DiskLru {
  private index = new Map<string, number>();
  private used = 0;
  private seq = 0;

  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly onError: (err: unknown) => void;
  constructor(dir: string, maxBytes: number, onError: (err: unknown) => void = () => {}) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    this.onError = onError;
    if (maxBytes <= 0) return;
    mkdirSync(dir, { recursive: true });
    const found: { name: string; size: number; mtime: number }[] = [];
    for (const shard of readdirSync(dir)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const f of readdirSync(join(dir, shard))) {
        if (!/^[0-9a-f]{40}$/.test(f)) continue;
        const st = statSync(join(dir, shard, f));
        found.push({ name: f, size: st.size, mtime: st.mtimeMs });
      }
    }
    found.sort((a, b) => a.mtime - b.mtime);
    for (const f of found) {
      this.index.set(f.name, f.size);
      this.used += f.size;
    }
    void this.evict();
  }

  private path(h: string): string {
    return join(this.dir, h.slice(0, 2), h);
  }

  async get(key: string): Promise<Cached | undefined> {
    if (this.maxBytes <= 0) return undefined;
    const h = hashKey(key);
    const size = this.index.get(h);
    if (size === undefined) return undefined;
    try {
      const buf = await readFile(this.path(h));
      const n = buf.readUInt32BE(0);
      const meta = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as Cached['meta'];
      if (meta['key'] !== key) return undefined; // a hash collision, however unlikely
      this.index.delete(h);
      this.index.set(h, size);
      return { body: buf.subarray(4 + n), meta };
    } catch (err) {
      this.forget(h);
      this.onError(err);
      return undefined;
    }
  }

  async set(key: string, v: Cached): Promise<void> {
    if (this.maxBytes <= 0) return;
    const h = hashKey(key);
    const meta = Buffer.from(JSON.stringify({ ...v.meta, key }), 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(meta.length, 0);
    const size = 4 + meta.length + v.body.length;
    if (size > this.maxBytes / 4) return;
    const target = this.path(h);
    const tmp = `${target}.${process.pid}.${this.seq++}.tmp`;
    try {
      mkdirSync(join(this.dir, h.slice(0, 2)), { recursive: true });
      await writeFile(tmp, Buffer.concat([head, meta, v.body]));
      await rename(tmp, target);
      this.forget(h);
      this.index.set(h, size);
      this.used += size;
      await this.evict();
    } catch (err) {
      await rm(tmp, { force: true });
      this.onError(err);
    }
  }

  private forget(h: string): void {
    const s = this.index.get(h);
    if (s === undefined) return;
    this.index.delete(h);
    this.used -= s;
  }

  private async evict(): Promise<void> {
    for (const [h] of this.index) {
      if (this.used <= this.maxBytes) return;
      this.forget(h);
      await rm(this.path(h), { force: true }).catch(this.onError);
    }
  }

  get bytes(): number {
    return this.used;
  }
}

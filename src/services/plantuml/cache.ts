// Content-addressed cache of rendered diagrams: a byte-bounded in-memory LRU in front of a
// byte-bounded directory (oldest files pruned first). Keys are hex SHA-256 of everything that
// shapes the output (engine, profile, format, page, source).
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ByteLru } from '../../infra/lru.ts';
import type { DiagramError } from './protocol.ts';

export interface Rendered {
  status: 'ok' | 'error';
  description: string;
  errors: DiagramError[];
  body: Buffer;
}

/** Byte-bounded LRU of rendered diagrams (256 bytes of bookkeeping counted per entry). */
export class MemoryLru extends ByteLru<Rendered> {
  constructor(maxBytes: number) {
    super(maxBytes, (v) => v.body.length + 256);
  }
}

/** Files: <dir>/<key[0..2]>/<key>, holding a u32 meta length, JSON meta, then the body. */
export class DiskCache {
  private used = -1; // unknown until the first scan
  private pruning: Promise<void> | null = null;

  private readonly dir: string;
  private readonly maxBytes: number;
  constructor(dir: string, maxBytes: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
  }

  private path(key: string): string {
    return join(this.dir, key.slice(0, 2), key);
  }

  async get(key: string): Promise<Rendered | undefined> {
    let buf: Buffer;
    try {
      buf = await readFile(this.path(key));
    } catch {
      return undefined;
    }
    try {
      const metaLen = buf.readUInt32BE(0);
      const meta = JSON.parse(buf.subarray(4, 4 + metaLen).toString('utf8')) as Omit<Rendered, 'body'>;
      if (meta.status !== 'ok' && meta.status !== 'error') return undefined;
      return { ...meta, body: buf.subarray(4 + metaLen) };
    } catch {
      return undefined; // a torn or foreign file: treated as a miss
    }
  }

  async set(key: string, v: Rendered): Promise<void> {
    const meta = Buffer.from(
      JSON.stringify({ status: v.status, description: v.description, errors: v.errors }),
      'utf8',
    );
    const head = Buffer.alloc(4);
    head.writeUInt32BE(meta.length);
    const file = this.path(key);
    await mkdir(join(this.dir, key.slice(0, 2)), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, Buffer.concat([head, meta, v.body]));
    await rename(tmp, file);
    if (this.used >= 0) this.used += 4 + meta.length + v.body.length;
    if (this.used < 0 || this.used > this.maxBytes) await this.prune();
  }

  /** Measures the directory and deletes the oldest files until it is under 80% of the cap. */
  prune(): Promise<void> {
    this.pruning ??= this.doPrune().finally(() => {
      this.pruning = null;
    });
    return this.pruning;
  }

  private async doPrune(): Promise<void> {
    const files: { path: string; size: number; mtime: number }[] = [];
    let subdirs: string[] = [];
    try {
      subdirs = await readdir(this.dir);
    } catch {
      this.used = 0;
      return;
    }
    for (const sub of subdirs) {
      let names: string[] = [];
      try {
        names = await readdir(join(this.dir, sub));
      } catch {
        continue;
      }
      for (const n of names) {
        const p = join(this.dir, sub, n);
        try {
          const s = await stat(p);
          files.push({ path: p, size: s.size, mtime: s.mtimeMs });
        } catch {}
      }
    }
    let used = files.reduce((a, f) => a + f.size, 0);
    if (used > this.maxBytes) {
      files.sort((a, b) => a.mtime - b.mtime);
      for (const f of files) {
        if (used <= this.maxBytes * 0.8) break;
        await unlink(f.path).catch(() => {});
        used -= f.size;
      }
    }
    this.used = used;
  }
}

// The operator's directory of images: scanned at start, rescanned on change events (debounced) and
// periodically. Ids are file paths without extension; `<stem>.json` beside an image may carry
// {author, license, url}. Oversized and unreadable files are skipped and logged, never served.
// Each top-level subdirectory is a category: a pick within one hashes over that directory alone.
import { type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import type { Logger } from 'pino';
import { loadSharp } from '../../infra/media/sharp.ts';
import { RASTER } from './render.ts';
import {
  type Catalogue,
  type Category,
  type ImageSource,
  indexOf,
  type Loaded,
  type SourceEntry,
  SourceError,
} from './source.ts';

const IMAGE_EXT = new Set([
  '.jpg',
  '.jpeg',
  '.png',
  '.webp',
  '.avif',
  '.gif',
  '.tif',
  '.tiff',
  '.heic',
  '.heif',
]);
const MAX_SIDECAR = 64 * 1024;
const MAX_FILES = 100_000;

interface DirEntry extends SourceEntry {
  path: string;
  size: number;
  mtimeMs: number;
}

export interface DirOptions {
  dir: string;
  maxSourceBytes: number;
  maxSourcePixels: number;
  rescanSec: number;
  logger: Logger;
}

export class DirSource implements ImageSource {
  readonly name = 'dir';
  private entries: DirEntry[] = [];
  private byId = new Map<string, DirEntry>();
  /** Entries per top-level subdirectory, in id order (a Map: names are data, never properties). */
  private byCategory = new Map<string, DirEntry[]>();
  private skipped = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private again = false;

  private readonly o: DirOptions;
  constructor(o: DirOptions) {
    this.o = o;
  }

  /** True once the first scan has finished (readiness). */
  scanned = false;

  /**
   * First scan, then watch. Waits for the first scan at most `waitMs`: a huge collection keeps
   * loading in the background while the next source answers, instead of delaying start-up.
   */
  async start(waitMs = 10_000): Promise<void> {
    const first = this.rescan().then(() => {
      this.scanned = true;
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([first, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    if (!this.scanned)
      this.o.logger.warn({ waitMs }, 'image dir still scanning; other sources answer meanwhile');
    try {
      this.watcher = watch(this.o.dir, { recursive: true, persistent: false }, () => this.soon());
      this.watcher.on('error', (err) => this.o.logger.warn({ err }, 'image dir watch failed'));
    } catch (err) {
      this.o.logger.warn({ err }, 'image dir cannot be watched; relying on periodic rescans');
    }
    if (this.o.rescanSec > 0) {
      this.timer = setInterval(() => void this.rescan(), this.o.rescanSec * 1000);
      this.timer.unref();
    }
  }

  private soon(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.rescan(), 250);
    this.debounce.unref();
  }

  /** Rescans now; a change during a scan triggers one more scan afterwards. */
  rescan(): Promise<void> {
    if (this.scanning) {
      this.again = true;
      return this.scanning;
    }
    this.scanning = this.scan()
      .catch((err) => this.o.logger.warn({ err }, 'image dir scan failed'))
      .finally(() => {
        this.scanning = undefined;
        if (this.again) {
          this.again = false;
          void this.rescan();
        }
      });
    return this.scanning;
  }

  private async scan(): Promise<void> {
    const names = (await imageFiles(this.o.dir)).sort().slice(0, MAX_FILES);
    const old = new Map(this.entries.map((e) => [e.path, e]));
    const next: DirEntry[] = [];
    for (const path of names) {
      const st = await stat(path).catch(() => undefined);
      if (!st) continue;
      const prev = old.get(path);
      if (prev && prev.size === st.size && prev.mtimeMs === st.mtimeMs) {
        next.push(prev);
        continue;
      }
      // A file skipped before is skipped again silently until it changes (no warning every rescan).
      const sig = `${st.size}:${st.mtimeMs}`;
      if (this.skipped.get(path) === sig) continue;
      const e = await this.inspect(path, st.size, st.mtimeMs);
      if (e) {
        next.push(e);
        this.skipped.delete(path);
      } else this.skipped.set(path, sig);
    }
    for (const p of this.skipped.keys()) if (!names.includes(p)) this.skipped.delete(p);
    // Ids are paths without extension; a clash (a.jpg and a.png) keeps the extension on both.
    const stems = new Map<string, number>();
    for (const e of next)
      stems.set(stemOf(this.o.dir, e.path), (stems.get(stemOf(this.o.dir, e.path)) ?? 0) + 1);
    for (const e of next) {
      const stem = stemOf(this.o.dir, e.path);
      e.id = (stems.get(stem) ?? 0) > 1 ? relative(this.o.dir, e.path).split(sep).join('/') : stem;
    }
    next.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const byCategory = new Map<string, DirEntry[]>();
    for (const e of next) {
      const parts = relative(this.o.dir, e.path).split(sep);
      if (parts.length < 2) continue;
      e.category = parts[0] as string;
      const members = byCategory.get(e.category);
      if (members) members.push(e);
      else byCategory.set(e.category, [e]);
    }
    if (next.length !== this.entries.length || next.some((e, i) => e !== this.entries[i]))
      this.o.logger.info({ dir: this.o.dir, images: next.length }, 'image dir scanned');
    this.entries = next;
    this.byId = new Map(next.map((e) => [e.id, e]));
    this.byCategory = byCategory;
  }

  private async inspect(path: string, size: number, mtimeMs: number): Promise<DirEntry | undefined> {
    const rel = relative(this.o.dir, path);
    if (size > this.o.maxSourceBytes) {
      this.o.logger.warn({ file: rel, size }, 'image skipped: file over the size cap');
      return undefined;
    }
    // Outside the try: a server without sharp fails the scan with that reason, not every file.
    const sharp = await loadSharp();
    try {
      const m = await sharp(path, { limitInputPixels: this.o.maxSourcePixels }).metadata();
      const w = m.autoOrient?.width ?? m.width;
      const h = m.autoOrient?.height ?? m.height;
      if (!m.format || !RASTER.has(m.format)) throw new Error(`format ${m.format} is not accepted`);
      if (!w || !h || w * h > this.o.maxSourcePixels) throw new Error(`${w}x${h} over the pixel cap`);
      const side = await sidecar(path);
      return {
        id: '',
        key: `dir:${rel}:${size}:${mtimeMs}`,
        path,
        size,
        mtimeMs,
        width: w,
        height: h,
        ...side,
      };
    } catch (err) {
      this.o.logger.warn(
        { file: rel, err: { message: (err as Error).message } },
        'image skipped: unreadable',
      );
      return undefined;
    }
  }

  get count(): number {
    return this.entries.length;
  }

  /**
   * With a category, only its images: a listed id (whole, `sub/square`, or within it, `square`), else
   * a stable hash of the id over that directory alone, so changes elsewhere never move it.
   */
  pick(id: string | null, category?: string): SourceEntry {
    const pool = category === undefined ? this.entries : (this.byCategory.get(category) ?? []);
    const n = pool.length;
    if (n === 0)
      throw new SourceError(
        category === undefined ? 'image directory has no usable images' : 'category is empty',
      );
    if (id === null) return pool[Math.floor(Math.random() * n)]!;
    const named =
      category === undefined
        ? this.byId.get(id)
        : [this.byId.get(`${category}/${id}`), this.byId.get(id)].find((e) => e?.category === category);
    return named ?? pool[indexOf(id, n)]!;
  }

  hasCategory(name: string): boolean {
    return this.byCategory.has(name);
  }

  categories(): Category[] {
    return [...this.byCategory]
      .map(([name, es]) => ({ name, total: es.length }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async load(entry: SourceEntry): Promise<Loaded> {
    const e = entry as DirEntry;
    const st = await stat(e.path).catch(() => undefined);
    if (!st || st.size > this.o.maxSourceBytes)
      throw new SourceError('image file vanished or grew past the cap');
    return { kind: 'bytes', data: await readFile(e.path) };
  }

  list(offset: number, limit: number, category?: string): Catalogue {
    const pool = category === undefined ? this.entries : (this.byCategory.get(category) ?? []);
    const items = pool.slice(offset, offset + limit).map(({ path: _p, size: _s, mtimeMs: _m, ...e }) => e);
    return { total: pool.length, items };
  }

  close(): void {
    this.watcher?.close();
    clearInterval(this.timer);
    clearTimeout(this.debounce);
  }
}

/**
 * Image files under `root`, walked by hand: `readdir(..., { recursive: true })` follows symlinked
 * directories on Node 26 (not on 20), which would serve files from outside the directory and loop
 * on a link to a parent. Symlinks are never followed; an unreadable subdirectory is skipped.
 */
async function imageFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const dirs = [root];
  for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
    const entries = await readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
      if (dir === root) throw err;
      return [];
    });
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) dirs.push(path);
      else if (e.isFile() && IMAGE_EXT.has(extname(e.name).toLowerCase())) out.push(path);
    }
  }
  return out;
}

function stemOf(dir: string, path: string): string {
  const rel = relative(dir, path).split(sep).join('/');
  return rel.slice(0, rel.length - extname(rel).length);
}

async function sidecar(path: string): Promise<Pick<SourceEntry, 'author' | 'license' | 'url'>> {
  const json = `${path.slice(0, path.length - extname(path).length)}.json`;
  try {
    const st = await stat(json);
    if (st.size > MAX_SIDECAR) return {};
    const v: unknown = JSON.parse(await readFile(json, 'utf8'));
    if (typeof v !== 'object' || v === null) return {};
    const r = v as Record<string, unknown>;
    const s = (k: string) => (typeof r[k] === 'string' ? (r[k] as string).slice(0, 500) : undefined);
    const out: Pick<SourceEntry, 'author' | 'license' | 'url'> = {};
    const author = s('author');
    const license = s('license') ?? s('licence');
    const url = s('url');
    if (author) out.author = author;
    if (license) out.license = license;
    if (url && /^https?:\/\//.test(url)) out.url = url;
    return out;
  } catch {
    return {};
  }
}

// One cache entry on disk: the body, then a JSON trailer (key, body size, times, metadata; shape in
// trailer-file.ts) under <dir>/<ab>/<sha256(key)>. A file whose trailer is torn or names another
// key is not an entry.
import type { FileHandle } from 'node:fs/promises';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readTrailer, splitTrailer, trailerBytes } from './trailer-file.ts';

const MAGIC = Buffer.from('DVC1');
const NAME = /^[0-9a-f]{64}$/;
const SHARD = /^[0-9a-f]{2}$/;

export interface CacheEntry<M> {
  readonly key: string;
  /** Body bytes. */
  readonly size: number;
  /** What the utility stored with the body (JSON-serialisable). */
  readonly meta: M;
  readonly storedAt: number;
  /** When the entry was stored or last confirmed by touch(). */
  readonly checkedAt: number;
  /** Ms since the epoch after which the entry is stale; null without a TTL. */
  readonly expiresAt: number | null;
}

interface Trailer<M> {
  k: string;
  n: number;
  s: number;
  c: number;
  e: number | null;
  m: M;
}

/** The same stored version (a touch keeps it; a new put makes another). */
export const same = (a: CacheEntry<unknown>, b: CacheEntry<unknown>) =>
  a.key === b.key && a.storedAt === b.storedAt && a.size === b.size;

export const trailerOf = <M>(e: CacheEntry<M>): Buffer =>
  trailerBytes(MAGIC, { k: e.key, n: e.size, s: e.storedAt, c: e.checkedAt, e: e.expiresAt, m: e.meta });

function entryOf<M>(key: string, value: unknown, bodySize: number): CacheEntry<M> | null {
  const t = value as Partial<Trailer<M>> | null;
  if (!t || t.k !== key || t.n !== bodySize || typeof t.s !== 'number' || typeof t.c !== 'number')
    return null;
  const expiresAt = typeof t.e === 'number' ? t.e : null;
  return { key, size: bodySize, meta: t.m as M, storedAt: t.s, checkedAt: t.c, expiresAt };
}

/** A whole file read into memory: the entry of `key` and its body, or null. */
export function decodeFile<M>(key: string, file: Buffer): { entry: CacheEntry<M>; body: Buffer } | null {
  const split = splitTrailer(file, MAGIC);
  const entry = split && entryOf<M>(key, split.value, split.body.length);
  return entry ? { entry, body: split.body } : null;
}

/** The entry of `key` from an open file's trailer, or null. */
export async function readEntry<M>(fh: FileHandle, key: string): Promise<CacheEntry<M> | null> {
  const t = await readTrailer(fh, MAGIC);
  return t && entryOf<M>(key, t.value, t.bodySize);
}

export const fileName = (hash: string) => join(hash.slice(0, 2), hash);

/**
 * The entry files under `dir` by hash, with size and modification time; files of older cache
 * formats (other names) in the shard directories are removed, not left outside the budget.
 */
export async function listFiles(dir: string): Promise<Map<string, { bytes: number; mtime: number }>> {
  const found = new Map<string, { bytes: number; mtime: number }>();
  for (const shard of await readdir(dir)) {
    if (!SHARD.test(shard)) continue;
    const names = await readdir(join(dir, shard)).catch(() => []);
    await Promise.all(
      names.map(async (name) => {
        const path = join(dir, shard, name);
        if (!NAME.test(name) || !name.startsWith(shard)) return rm(path, { force: true }).catch(() => {});
        const st = await stat(path).catch(() => null);
        if (st?.isFile()) found.set(name, { bytes: st.size, mtime: st.mtimeMs });
      }),
    );
  }
  return found;
}

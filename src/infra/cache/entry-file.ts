// One cache entry on disk: two files in <dir>/<ab>/ (ab: the first two hex digits of sha256(key)).
// <hash>.<version> holds the body alone, so a front proxy can send it as is (X-Accel-Redirect,
// sendfile); it is never rewritten: each new version of a key gets a new name. <hash>.meta is a
// JSON record (key, body version and size, times, metadata). A record that does not parse or
// names another key is not an entry.
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

const MAX_RECORD = 64 * 1024;
const META = /^([0-9a-f]{64})\.meta$/;
const BODY = /^([0-9a-f]{64})\.([0-9a-f]{16})$/;
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

interface Rec<M> {
  k: string;
  /** Body version: the body is <hash>.<v>. */
  v: string;
  n: number;
  s: number;
  c: number;
  e: number | null;
  m: M;
}

/** The same stored version (a touch keeps it; a new put makes another). */
export const same = (a: CacheEntry<unknown>, b: CacheEntry<unknown>) =>
  a.key === b.key && a.storedAt === b.storedAt && a.size === b.size;

/** A fresh body version name. */
export const newVersion = (): string => randomBytes(8).toString('hex');

export const metaPath = (h: string) => `${h.slice(0, 2)}/${h}.meta`;
/** Relative to the cache directory, with "/" (also the path under an nginx alias). */
export const bodyPath = (h: string, version: string) => `${h.slice(0, 2)}/${h}.${version}`;

/** The record of an entry whose body is version `v`. Throws past MAX_RECORD. */
export function recordOf<M>(e: CacheEntry<M>, v: string): Buffer {
  const r: Rec<M> = { k: e.key, v, n: e.size, s: e.storedAt, c: e.checkedAt, e: e.expiresAt, m: e.meta };
  const json = Buffer.from(JSON.stringify(r));
  if (json.length > MAX_RECORD) throw new Error('cache metadata too large');
  return json;
}

/** The entry of `key` and its body version from a record file, or null. */
export function parseRecord<M>(key: string, file: Buffer): { entry: CacheEntry<M>; version: string } | null {
  let r: Partial<Rec<M>> | null;
  try {
    r = JSON.parse(file.toString('utf8')) as Partial<Rec<M>> | null;
  } catch {
    return null;
  }
  if (!r || r.k !== key || typeof r.v !== 'string' || !/^[0-9a-f]{16}$/.test(r.v)) return null;
  if (typeof r.n !== 'number' || typeof r.s !== 'number' || typeof r.c !== 'number') return null;
  const expiresAt = typeof r.e === 'number' ? r.e : null;
  const entry = { key, size: r.n, meta: r.m as M, storedAt: r.s, checkedAt: r.c, expiresAt };
  return { entry, version: r.v };
}

export interface Stat {
  bytes: number;
  mtime: number;
}

/** What the directory holds for one hash: its record (if any) and its body files by version. */
export interface Listed {
  meta: Stat | null;
  bodies: Map<string, Stat>;
}

/**
 * The entry files under `dir` by hash. Files of older cache formats (other names, such as the
 * single file of body and trailer named by the bare hash) are removed once, not left outside the
 * budget: a cache may be cleared on upgrade.
 */
export async function listFiles(dir: string): Promise<Map<string, Listed>> {
  const found = new Map<string, Listed>();
  const at = (h: string) => {
    let l = found.get(h);
    if (!l) {
      l = { meta: null, bodies: new Map() };
      found.set(h, l);
    }
    return l;
  };
  for (const shard of await readdir(dir)) {
    if (!SHARD.test(shard)) continue;
    const names = await readdir(join(dir, shard)).catch(() => []);
    await Promise.all(
      names.map(async (name) => {
        const path = join(dir, shard, name);
        const m = META.exec(name) ?? BODY.exec(name);
        const h = m?.[1];
        if (!h?.startsWith(shard)) return rm(path, { force: true }).catch(() => {});
        const st = await stat(path).catch(() => null);
        if (!st?.isFile()) return;
        const s = { bytes: st.size, mtime: st.mtimeMs };
        if (m?.[2]) at(h).bodies.set(m[2], s);
        else at(h).meta = s;
      }),
    );
  }
  return found;
}

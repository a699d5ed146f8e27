// Mirroring an upstream Gravatar-compatible service (issue 8 "Mirrored", docs/protocols/gravatar.md §7).
// Originals are fetched once per hash and rating at one size with d=404, kept on disk with the upstream's
// max-age, served stale while a background refresh runs, and kept as the offline fallback when the upstream
// is down. "No such avatar" and failures are remembered briefly in memory only, so a flood of random hashes
// cannot fill the disk. Originals live in the shared cache (infra/cache/cache.ts, disk only), their
// freshness as the entry's expiresAt.
import type { Logger } from 'pino';
import { Cache, type CacheEntry } from '../../infra/cache/cache.ts';
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { BodyTooLarge, readCapped } from '../../infra/egress/capped-body.ts';
import { createEgress, type Egress } from '../../infra/egress/client.ts';
import { conditionalGet, validatorsOf } from '../../infra/egress/revalidate.ts';
import { loadSharp } from '../../infra/media/sharp.ts';
import type { Rating } from './request.ts';

export interface MirrorOptions {
  upstream: string;
  size: number;
  timeoutMs: number;
  maxBytes: number;
  maxPixels: number;
  minTtlSec: number;
  maxTtlSec: number;
  staleSec: number;
  missTtlSec: number;
  errorTtlSec: number;
  dir: string;
  /** Disk budget for the originals. */
  diskBytes: number;
  logger: Logger;
  userAgent: string;
  /** `host=address:port` overrides (config egress.resolve). */
  resolve: readonly string[];
  onResult?: (result: 'ok' | 'not_modified' | 'missing' | 'error') => void;
}

interface Meta {
  etag: string;
  lastModified: string;
  fetchedAt: number;
  expiresAt: number;
}

/** Stored with an original; the expiry is the cache entry's own. */
type Stored = Omit<Meta, 'expiresAt'>;

export interface MirrorHit {
  /** Changes whenever the stored original changes: part of rendered-cache keys. */
  version: string;
  lastModified: Date;
  load(): Promise<Buffer>;
}

type Fetched =
  | { kind: 'ok'; meta: Meta; body: Buffer }
  | { kind: 'not_modified' }
  | { kind: 'missing' }
  | { kind: 'error' };

const NEGATIVE_MAX = 50_000;

const view = (e: CacheEntry<Stored>): Meta => ({ ...e.meta, expiresAt: e.expiresAt ?? 0 });

export class Mirror {
  readonly cache: Cache<Stored>;
  private negative = new Map<string, number>();
  private backoff = new Map<string, number>();
  private readonly flights = new SingleFlight<Fetched>();
  private readonly http: Egress;

  private readonly o: MirrorOptions;
  constructor(o: MirrorOptions) {
    this.o = o;
    this.http = createEgress({ resolve: o.resolve, timeoutMs: o.timeoutMs, connections: 16 });
    this.cache = new Cache<Stored>({
      name: 'avatar-mirror',
      dir: o.dir,
      diskBytes: o.diskBytes,
      memoryBytes: 0,
      onError: (err) =>
        o.logger.warn(
          { reason: err instanceof Error ? err.message : String(err) },
          'avatar mirror cache failed',
        ),
    });
  }

  /** Closes the upstream connections and waits for pending cache writes. */
  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.cache.idle()]);
  }

  async find(hash: string, rating: Rating, now = Date.now()): Promise<MirrorHit | null> {
    const key = `${hash}-${rating}`;
    const stored = await this.cache.peek(key);
    if (stored) {
      const meta = view(stored);
      if (now < meta.expiresAt) return this.hit(stored);
      const inBackoff = (this.backoff.get(key) ?? 0) > now;
      if (now < meta.expiresAt + this.o.staleSec * 1000 || inBackoff) {
        if (!inBackoff) void this.refresh(key, hash, rating, meta);
        return this.hit(stored);
      }
      const r = await this.refresh(key, hash, rating, meta);
      if (r.kind === 'missing') return null;
      // Upstream unreachable: the old copy is better than a generated default (offline fallback).
      return this.latest(key);
    }
    const until = this.negative.get(key);
    if (until !== undefined && until > now) return null;
    const r = await this.refresh(key, hash, rating, null);
    return r.kind === 'ok' ? this.latest(key) : null;
  }

  private async latest(key: string): Promise<MirrorHit | null> {
    const e = await this.cache.peek(key);
    return e ? this.hit(e) : null;
  }

  private hit(e: CacheEntry<Stored>): MirrorHit {
    const m = e.meta;
    return {
      version: `${m.etag || m.lastModified || ''}@${m.fetchedAt}`,
      lastModified: new Date(m.lastModified || m.fetchedAt),
      // The version found, or the current one if a refresh replaced it meanwhile.
      load: async () => {
        const body = (await this.cache.body(e)) ?? (await this.cache.get(e.key))?.body;
        if (!body) throw new Error('the mirrored original is gone');
        return body;
      },
    };
  }

  /** One upstream request per key at a time; the result updates disk and memory. */
  private refresh(key: string, hash: string, rating: Rating, meta: Meta | null): Promise<Fetched> {
    return this.flights.run(key, () => this.fetchAndStore(key, hash, rating, meta));
  }

  private async fetchAndStore(
    key: string,
    hash: string,
    rating: Rating,
    meta: Meta | null,
  ): Promise<Fetched> {
    const now = Date.now();
    const r = await this.fetch(hash, rating, meta);
    this.o.onResult?.(r.kind);
    if (r.kind === 'ok') {
      const { expiresAt, ...stored } = r.meta;
      // A failed write is logged by the cache; without a stored copy there is nothing to serve.
      if (!(await this.cache.put(key, r.body, stored, { ttlMs: expiresAt - Date.now() })))
        return { kind: 'error' };
      this.negative.delete(key);
      this.backoff.delete(key);
    } else if (r.kind === 'not_modified' && meta) {
      await this.cache.touch(key, { ttlMs: this.o.minTtlSec * 1000 });
      this.backoff.delete(key);
    } else if (r.kind === 'missing') {
      this.cache.delete(key);
      this.remember(this.negative, key, now + this.o.missTtlSec * 1000);
    } else {
      this.remember(meta ? this.backoff : this.negative, key, now + this.o.errorTtlSec * 1000);
    }
    return r;
  }

  private remember(map: Map<string, number>, key: string, until: number): void {
    map.delete(key);
    map.set(key, until);
    if (map.size > NEGATIVE_MAX) map.delete(map.keys().next().value as string);
  }

  private async fetch(hash: string, rating: Rating, meta: Meta | null): Promise<Fetched> {
    const url = new URL(`${this.o.upstream}/avatar/${hash}?s=${this.o.size}&d=404&r=${rating}`);
    const headers = { 'user-agent': this.o.userAgent, accept: 'image/*' };
    try {
      const r = await conditionalGet(
        this.http,
        { url, headers, signal: AbortSignal.timeout(this.o.timeoutMs) },
        meta,
      );
      if (r.notModified) return { kind: 'not_modified' };
      const res = r.res;
      if (res.statusCode === 404) {
        await res.body.dump();
        return { kind: 'missing' };
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        this.o.logger.warn({ status: res.statusCode }, 'avatar upstream answered unexpectedly');
        return { kind: 'error' };
      }
      let body: Buffer;
      try {
        body = await readCapped(res.body, this.o.maxBytes, { declared: res.headers['content-length'] });
      } catch (err) {
        if (!(err instanceof BodyTooLarge)) throw err;
        this.o.logger.warn({ maxBytes: this.o.maxBytes }, 'avatar upstream image too large');
        return { kind: 'error' };
      }
      // Only decodable images of a known format are kept: the upstream is trusted to be Gravatar,
      // not to always answer with an image.
      const sharp = await loadSharp();
      const info = await sharp(body, { limitInputPixels: this.o.maxPixels }).metadata();
      if (!['jpeg', 'png', 'gif', 'webp'].includes(info.format ?? '')) return { kind: 'error' };
      const ttl = Math.min(
        Math.max(maxAge(res.headers['cache-control']) ?? 0, this.o.minTtlSec),
        this.o.maxTtlSec,
      );
      const v = validatorsOf(res.headers);
      return {
        kind: 'ok',
        body,
        meta: {
          etag: v.etag ?? '',
          lastModified: v.lastModified ?? '',
          fetchedAt: Date.now(),
          expiresAt: Date.now() + ttl * 1000,
        },
      };
    } catch (err) {
      this.o.logger.warn(
        { reason: err instanceof Error ? err.message : String(err) },
        'avatar upstream failed',
      );
      return { kind: 'error' };
    }
  }
}

/** max-age (or s-maxage) in seconds from a Cache-Control header; null when absent. */
export function maxAge(header: string | string[] | undefined): number | null {
  const h = Array.isArray(header) ? header.join(',') : (header ?? '');
  if (/(^|,)\s*(no-store|no-cache)\b/i.test(h)) return 0;
  const m = /(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*"?(\d{1,10})"?/i.exec(h);
  return m ? Number(m[1]) : null;
}

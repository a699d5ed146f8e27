// Mirroring upstream Gravatar-compatible services (issue 8 "Mirrored", docs/protocols/gravatar.md §7),
// tried in the configured order: a mirror that fails (no answer in time, a refused connection, a DNS
// failure, a 5xx or 429) is skipped for errorTtlSec, so the next is asked and, with all of them down,
// new hashes fall through to the default at once instead of each waiting on DNS or a timeout again.
// The same class fetches GitHub avatars (github.ts gives it the URL and the redirect rule).
// Originals are fetched once per hash and rating at one size with d=404, kept on disk with the upstream's
// max-age, served stale while a background refresh runs, and kept as the offline fallback when the upstream
// is down. "No such avatar" and failures are remembered briefly in memory only, so a flood of random hashes
// cannot fill the disk. Originals live in the shared cache (infra/cache/cache.ts, disk only), their
// freshness as the entry's expiresAt.
import type { Logger } from 'pino';
import { Cache, type CacheEntry } from '../../infra/cache/cache.ts';
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { BodyTooLarge, readCapped } from '../../infra/egress/capped-body.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { conditionalGet, validatorsOf } from '../../infra/egress/revalidate.ts';
import { loadSharp } from '../../infra/media/sharp.ts';
import type { Rating } from './request.ts';

export interface MirrorOptions {
  /** Base URLs, tried in this order. */
  upstreams: readonly string[];
  /** The request for `id` at one base; default: Gravatar's `/avatar/<hash>?s=&d=404&r=`. */
  requestUrl?: (base: string, id: string, rating: Rating, size: number) => URL;
  /** Redirect targets followed (GitHub's `<user>.png` answers 302 to its avatar CDN); none by default. */
  followRedirect?: (to: URL) => boolean;
  /** Cache keys are `<prefix><id>-<rating>`: two mirrors can share one store. */
  keyPrefix?: string;
  /** The store of originals (disk only), shared by every mirror of the utility. */
  cache: Cache<Stored>;
  size: number;
  timeoutMs: number;
  maxBytes: number;
  maxPixels: number;
  minTtlSec: number;
  maxTtlSec: number;
  staleSec: number;
  missTtlSec: number;
  errorTtlSec: number;
  logger: Logger;
  userAgent: string;
  /** The outbound client (behind the egress guard, with the utility's policy); closed with the mirror. */
  http: Egress;
  /** `skipped`: every upstream was marked down, none was asked. */
  onResult?: (result: 'ok' | 'not_modified' | 'missing' | 'error' | 'skipped') => void;
}

/** Redirect hops followed for one fetch. */
const MAX_REDIRECTS = 3;

interface Meta {
  etag: string;
  lastModified: string;
  fetchedAt: number;
  expiresAt: number;
}

/** Stored with an original; the expiry is the cache entry's own. */
export type Stored = Omit<Meta, 'expiresAt'>;

/** The originals' store for `createMirrorStore`'s callers: disk only, least recently used go first. */
export function createMirrorStore(dir: string, diskBytes: number, logger: Logger): Cache<Stored> {
  return new Cache<Stored>({
    name: 'avatar-mirror',
    dir,
    diskBytes,
    memoryBytes: 0,
    onError: (err) =>
      logger.warn({ reason: err instanceof Error ? err.message : String(err) }, 'avatar mirror cache failed'),
  });
}

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

/** One upstream's answer; `down` marks a failure of the upstream itself, not of this one image. */
type Attempt = Fetched | { kind: 'error'; down: boolean };

const NEGATIVE_MAX = 50_000;

const view = (e: CacheEntry<Stored>): Meta => ({ ...e.meta, expiresAt: e.expiresAt ?? 0 });

export class Mirror {
  readonly cache: Cache<Stored>;
  private negative = new Map<string, number>();
  private backoff = new Map<string, number>();
  /** Upstream base -> until when it is skipped. */
  private down = new Map<string, number>();
  private readonly flights = new SingleFlight<Fetched>();
  private readonly http: Egress;

  private readonly o: MirrorOptions;
  constructor(o: MirrorOptions) {
    this.o = o;
    this.http = o.http;
    this.cache = o.cache;
  }

  /** The upstreams not marked down at `now`, in order. */
  usable(now = Date.now()): string[] {
    return this.o.upstreams.filter((u) => (this.down.get(u) ?? 0) <= now);
  }

  /** Closes the upstream connections and waits for pending cache writes. */
  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.cache.idle()]);
  }

  async find(hash: string, rating: Rating, now = Date.now()): Promise<MirrorHit | null> {
    const key = `${this.o.keyPrefix ?? ''}${hash}-${rating}`;
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
    const r = await this.fetchAny(hash, rating, meta);
    this.o.onResult?.(r === SKIPPED ? 'skipped' : r.kind);
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

  /**
   * Asks the upstreams in order until one answers for this image: the first "ok", "not modified" or
   * "no such avatar" wins. An upstream that fails as a whole is skipped for errorTtlSec.
   */
  private async fetchAny(hash: string, rating: Rating, meta: Meta | null): Promise<Fetched> {
    let asked = false;
    for (const base of this.usable()) {
      asked = true;
      const r = await this.fetch(base, hash, rating, meta);
      if (r.kind !== 'error') return r;
      if ('down' in r && r.down && this.o.errorTtlSec > 0) {
        this.down.set(base, Date.now() + this.o.errorTtlSec * 1000);
        this.o.logger.warn(
          { upstream: new URL(base).host, retryInSec: this.o.errorTtlSec },
          'avatar upstream skipped after a failure',
        );
      }
    }
    return asked ? { kind: 'error' } : SKIPPED;
  }

  private async fetch(base: string, hash: string, rating: Rating, meta: Meta | null): Promise<Attempt> {
    let url =
      this.o.requestUrl?.(base, hash, rating, this.o.size) ??
      new URL(`${base}/avatar/${hash}?s=${this.o.size}&d=404&r=${rating}`);
    const headers = { 'user-agent': this.o.userAgent, accept: 'image/*' };
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    try {
      let r = await conditionalGet(this.http, { url, headers, signal }, meta);
      for (let hop = 0; !r.notModified && isRedirect(r.res.statusCode); hop++) {
        const location = r.res.headers['location'];
        await r.res.body.dump();
        const to = typeof location === 'string' ? parseUrl(location, url) : null;
        if (hop >= MAX_REDIRECTS || !to || !this.o.followRedirect?.(to)) {
          this.o.logger.warn({ upstream: url.host }, 'avatar upstream redirected where it may not');
          return { kind: 'error', down: false };
        }
        url = to;
        r = await conditionalGet(this.http, { url, headers, signal }, meta);
      }
      if (r.notModified) return { kind: 'not_modified' };
      const res = r.res;
      if (res.statusCode === 404) {
        await res.body.dump();
        return { kind: 'missing' };
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        this.o.logger.warn(
          { upstream: url.host, status: res.statusCode },
          'avatar upstream answered unexpectedly',
        );
        return { kind: 'error', down: res.statusCode >= 500 || res.statusCode === 429 };
      }
      let body: Buffer;
      try {
        body = await readCapped(res.body, this.o.maxBytes, { declared: res.headers['content-length'] });
      } catch (err) {
        if (!(err instanceof BodyTooLarge)) throw err;
        this.o.logger.warn({ maxBytes: this.o.maxBytes }, 'avatar upstream image too large');
        return { kind: 'error', down: false };
      }
      // Only decodable images of a known format are kept: the upstream is trusted to be Gravatar,
      // not to always answer with an image.
      const sharp = await loadSharp();
      const info = await sharp(body, { limitInputPixels: this.o.maxPixels }).metadata();
      if (!['jpeg', 'png', 'gif', 'webp'].includes(info.format ?? '')) return { kind: 'error', down: false };
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
      // No answer at all (DNS, connect, timeout): the upstream is down, not this image.
      const reason = err instanceof Error ? err.message : String(err);
      this.o.logger.warn({ upstream: url.host, reason }, 'avatar upstream failed');
      return { kind: 'error', down: !isImageError(err) };
    }
  }
}

/** Every upstream was marked down: nothing was asked. */
const SKIPPED: Fetched = { kind: 'error' };

const isRedirect = (status: number) =>
  status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

function parseUrl(text: string, base: URL): URL | null {
  try {
    return new URL(text, base);
  } catch {
    return null;
  }
}

/** sharp's "cannot decode this" is about the image, not the upstream. */
function isImageError(err: unknown): boolean {
  return (
    err instanceof Error && /Input (buffer|file)|unsupported image format|pixel limit/i.test(err.message)
  );
}

/** max-age (or s-maxage) in seconds from a Cache-Control header; null when absent. */
export function maxAge(header: string | string[] | undefined): number | null {
  const h = Array.isArray(header) ? header.join(',') : (header ?? '');
  if (/(^|,)\s*(no-store|no-cache)\b/i.test(h)) return 0;
  const m = /(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*"?(\d{1,10})"?/i.exec(h);
  return m ? Number(m[1]) : null;
}

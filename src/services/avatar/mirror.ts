// Mirroring an upstream Gravatar-compatible service (issue 8 "Mirrored", spec §7). Originals are
// fetched once per hash and rating at one size with d=404, kept on disk with the upstream's
// max-age, served stale while a background refresh runs, and kept as the offline fallback when the
// upstream is down. "No such avatar" and failures are remembered briefly in memory only, so a
// flood of random hashes cannot fill the disk.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import sharp from 'sharp';
import type { Dispatcher } from 'undici';
import { BodyTooLarge, readCapped } from '../../infra/capped-body.ts';
import { createEgress } from '../../infra/egress.ts';
import { SingleFlight } from '../../infra/single-flight.ts';
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
/** Mirrored entries whose metadata stays in memory; older ones are read from disk again. */
const META_MAX = 100_000;

export class Mirror {
  private metas = new Map<string, Meta | null>();
  private negative = new Map<string, number>();
  private backoff = new Map<string, number>();
  private readonly flights = new SingleFlight<Fetched>();
  private readonly http: Dispatcher;

  private readonly o: MirrorOptions;
  constructor(o: MirrorOptions) {
    this.o = o;
    this.http = createEgress({ resolve: o.resolve, timeoutMs: o.timeoutMs, connections: 16 });
  }

  close(): Promise<void> {
    return this.http.close();
  }

  async find(hash: string, rating: Rating, now = Date.now()): Promise<MirrorHit | null> {
    const key = `${hash}-${rating}`;
    const meta = await this.meta(key);
    if (meta) {
      if (now < meta.expiresAt) return this.hit(key, meta);
      const inBackoff = (this.backoff.get(key) ?? 0) > now;
      if (now < meta.expiresAt + this.o.staleSec * 1000 || inBackoff) {
        if (!inBackoff) void this.refresh(key, hash, rating, meta);
        return this.hit(key, meta);
      }
      const r = await this.refresh(key, hash, rating, meta);
      if (r.kind === 'missing') return null;
      // Upstream unreachable: the old copy is better than a generated default (offline fallback).
      const latest = this.metas.get(key);
      return latest ? this.hit(key, latest) : null;
    }
    const until = this.negative.get(key);
    if (until !== undefined && until > now) return null;
    const r = await this.refresh(key, hash, rating, null);
    const latest = r.kind === 'ok' ? this.metas.get(key) : null;
    return latest ? this.hit(key, latest) : null;
  }

  private hit(key: string, meta: Meta): MirrorHit {
    return {
      version: `${meta.etag || meta.lastModified || ''}@${meta.fetchedAt}`,
      lastModified: new Date(meta.lastModified || meta.fetchedAt),
      load: () => readFile(this.path(key, 'img')),
    };
  }

  private path(key: string, ext: 'img' | 'json'): string {
    const d = createHash('sha256').update(key).digest('hex');
    return join(this.o.dir, d.slice(0, 2), `${d.slice(2)}.${ext}`);
  }

  private async meta(key: string): Promise<Meta | null> {
    const cached = this.metas.get(key);
    if (cached !== undefined) return cached;
    let meta: Meta | null = null;
    try {
      meta = JSON.parse(await readFile(this.path(key, 'json'), 'utf8')) as Meta;
      if (typeof meta.expiresAt !== 'number') meta = null;
    } catch {}
    // Only positives are remembered (misses would grow this map without bound), and only so many.
    if (meta) this.keep(key, meta);
    return meta;
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
      try {
        await this.store(key, r.meta, r.body);
      } catch (err) {
        this.o.logger.warn(
          { reason: err instanceof Error ? err.message : String(err) },
          'avatar mirror write failed',
        );
        return { kind: 'error' };
      }
      this.negative.delete(key);
      this.backoff.delete(key);
    } else if (r.kind === 'not_modified' && meta) {
      const fresh = { ...meta, expiresAt: now + this.o.minTtlSec * 1000 };
      await this.writeMeta(key, fresh);
      this.backoff.delete(key);
    } else if (r.kind === 'missing') {
      this.metas.delete(key);
      await unlink(this.path(key, 'json')).catch(() => {});
      await unlink(this.path(key, 'img')).catch(() => {});
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
    const headers: Record<string, string> = { 'user-agent': this.o.userAgent, accept: 'image/*' };
    if (meta?.etag) headers['if-none-match'] = meta.etag;
    if (meta?.lastModified) headers['if-modified-since'] = meta.lastModified;
    try {
      const res = await this.http.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      if (res.statusCode === 304 && meta) {
        await res.body.dump();
        return { kind: 'not_modified' };
      }
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
      const info = await sharp(body, { limitInputPixels: this.o.maxPixels }).metadata();
      if (!['jpeg', 'png', 'gif', 'webp'].includes(info.format ?? '')) return { kind: 'error' };
      const ttl = Math.min(
        Math.max(maxAge(res.headers['cache-control']) ?? 0, this.o.minTtlSec),
        this.o.maxTtlSec,
      );
      const header = (h: string | string[] | undefined) => (typeof h === 'string' ? h : '');
      return {
        kind: 'ok',
        body,
        meta: {
          etag: header(res.headers['etag']),
          lastModified: header(res.headers['last-modified']),
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

  private async store(key: string, meta: Meta, body: Buffer): Promise<void> {
    const img = this.path(key, 'img');
    await mkdir(join(img, '..'), { recursive: true });
    const tmp = `${img}.${process.pid}.tmp`;
    await writeFile(tmp, body);
    await rename(tmp, img);
    await this.writeMeta(key, meta);
  }

  private keep(key: string, meta: Meta): void {
    this.metas.delete(key);
    this.metas.set(key, meta);
    if (this.metas.size > META_MAX) this.metas.delete(this.metas.keys().next().value as string);
  }

  private async writeMeta(key: string, meta: Meta): Promise<void> {
    this.keep(key, meta);
    const path = this.path(key, 'json');
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(tmp, JSON.stringify(meta));
      await rename(tmp, path);
    } catch (err) {
      this.o.logger.warn(
        { reason: err instanceof Error ? err.message : String(err) },
        'avatar mirror write failed',
      );
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

// The lookup order of issue 8 / docs/protocols/gravatar.md §7, framework-free: forced default -> uploaded
// here (if the rating allows) -> mirrored upstream -> the default (404, an allow-listed 302, or a
// generator). Rendered bytes are cached by (source version, size, format); the ETag is derived from that
// key, so a conditional request is answered without rendering anything. The renderings of an uploaded image
// are tracked by its hash, so a change or delete evicts them (evict(), from index.ts).
import { createHash } from 'node:crypto';
import type { Cache } from '../../infra/cache/cache.ts';
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { lazyImpl } from '../../infra/http/lazy.ts';
import { FairQueue } from '../../infra/limits/fair-queue.ts';
import { dicebearSvg, dicebearVersion } from './gen/dicebear.ts';
import type { Mirror } from './mirror.ts';
import { allowedRedirect, type parseAllowList } from './redirect.ts';
import { MIME, renderArt, resizeImage } from './render.ts';
import { type AvatarQuery, ratingAllows } from './request.ts';
import { Seed } from './seed.ts';
import type { Uploads } from './uploads.ts';

// The generators load on the first generated avatar, not at start (infra/http/lazy.ts).
const GENERATORS = lazyImpl('the avatar generators', async () => (await import('./gen/index.ts')).GENERATORS);

/** Bump when any generator or encoder changes its output: it is part of every ETag and cache key. */
export const RENDER_REV = 2;

const ETAG_MEMO = 20_000;
/** Uploaded images whose renderings are tracked for eviction (the oldest are forgotten past it). */
const TRACKED_UPLOADS = 20_000;

export type Source = 'upload' | 'mirror' | 'github' | 'generated';
/** What an answer is counted as (devutil_avatar_responses_total): its image's source, else its kind. */
export type Served = Source | 'not_found' | 'redirect';

export type Outcome =
  | {
      kind: 'image';
      source: Source;
      etag: string;
      contentType: string;
      lastModified: Date | null;
      /** Renders (or reads from cache) the bytes; skipped for 304s. */
      body(): Promise<Buffer>;
      /** The bytes if the memory tier has them, synchronously (the hot path); else undefined. */
      hit(): Buffer | undefined;
      /**
       * Whether the memory tier still holds exactly `body` (counted as a memory hit when it does):
       * hit() === body without a hit object made, for the fast lane's check before each repeat.
       */
      holds(body: Buffer): boolean;
    }
  | { kind: 'redirect'; location: string }
  | { kind: 'not_found' };

export interface ServiceDeps {
  uploads: Uploads | null;
  mirror: Mirror | null;
  /** GitHub account pictures (github.ts); null when off. */
  github: Mirror | null;
  /** Rendered bytes by (render revision, source version, size, format); no metadata needed. */
  cache: Cache<null>;
  redirectRules: ReturnType<typeof parseAllowList>;
  maxPixels: number;
  concurrency: number;
  queue: number;
  /** Fraction of the render slots and of the queue one client may hold. */
  clientShare: number;
  /** How long an upload lookup may take before the store counts as away for this answer. */
  storeTimeoutMs: number;
  /** A lookup that failed or timed out (the answer went on without uploads). */
  onStoreError?: (err: unknown) => void;
  onCache?: (layer: 'memory' | 'disk' | 'render') => void;
  onRender?: (seconds: number) => void;
}

export class AvatarService {
  private renders: FairQueue;
  private readonly flights = new SingleFlight<Buffer>();
  private etags = new Map<string, string>();
  /** Upload SHA-256 -> the cache keys rendered from it on this instance since it started. */
  private renderedFrom = new Map<string, Set<string>>();

  private readonly d: ServiceDeps;
  constructor(d: ServiceDeps) {
    this.d = d;
    this.renders = new FairQueue({
      concurrency: d.concurrency,
      queueLength: d.queue,
      clientShare: d.clientShare,
    });
  }

  /** Renders waiting for a slot. */
  get queued(): number {
    return this.renders.stats.queued;
  }

  /** The answer for `q` asked by `client` (its addressGroup: renders are queued under its share). */
  async resolve(q: AvatarQuery, client: string): Promise<Outcome> {
    if (q.hash && !q.force) {
      const up = this.d.uploads ? await this.findUpload(this.d.uploads, q.hash) : null;
      if (up && ratingAllows(q.rating, up.rating)) {
        const uploads = this.d.uploads!;
        return this.image(
          q,
          client,
          'upload',
          `up:${up.sha256}:${up.version}`,
          up.lastModified,
          () => uploads.load(up),
          up.sha256,
        );
      }
      // A rated-out upload means "show the default", not "ask the upstream instead".
      if (!up && this.d.mirror && q.mirror) {
        const hit = await this.d.mirror.find(q.hash.hex, q.rating);
        if (hit)
          return this.image(
            q,
            client,
            'mirror',
            `mi:${q.hash.hex}:${q.rating}:${hit.version}`,
            hit.lastModified,
            () => hit.load(),
          );
      }
    }
    const def = q.default;
    if (def.kind === '404') return { kind: 'not_found' };
    if (def.kind === 'url') {
      const location = allowedRedirect(def.url, this.d.redirectRules);
      if (location) return { kind: 'redirect', location };
    }
    if (def.kind === 'dicebear') {
      // Which packages draw it is part of the key: an upgrade may draw another picture. Throws
      // DicebearMissing when they are not installed (the route names the install line).
      const drawnBy = dicebearVersion(def.style);
      // DiceBear's initials are letters of the seed: the initials or name given, else the hash.
      const seed = def.style === 'initials' && q.initials ? q.initials : q.seedText;
      return this.cached(q, client, 'generated', `gen:dicebear:${drawnBy}:${seed}`, null, async () =>
        renderArt({ kind: 'svg', svg: await dicebearSvg(def.style, seed, q.size) }, q.size, q.format),
      );
    }
    // An off-list d=<url> gets the configured default, never a fetch or a redirect.
    const name = def.kind === 'generate' ? def.name : q.fallback;
    const extra = name === 'initials' ? `:${q.initials}` : '';
    // mp and blank look the same for everyone: one cache entry (and ETag) for all hashes.
    const seedPart = name === 'mp' || name === 'blank' ? '' : q.seedText;
    const key = `gen:${name}:${seedPart}${extra}`;
    return this.cached(q, client, 'generated', key, null, async () => {
      const gen = (await GENERATORS.get())[name];
      return renderArt(gen(new Seed(q.seedText), q.size, { initials: q.initials }), q.size, q.format);
    });
  }

  /**
   * The picture of GitHub account `login` (lower-cased), else the d= default seeded with the login;
   * q.hash is ignored.
   */
  async resolveGithub(login: string, q: AvatarQuery, client: string): Promise<Outcome> {
    const gh = this.d.github;
    const hit = gh && !q.force && q.mirror ? await gh.find(login, 'g') : null;
    if (hit)
      return this.image(q, client, 'github', `gh:${login}:${hit.version}`, hit.lastModified, () =>
        hit.load(),
      );
    return this.resolve({ ...q, hash: null }, client);
  }

  /**
   * The upload for a hash, or null when there is none or the store does not answer in time: an
   * unreachable or hung S3 must not take generated avatars (and mirrored ones) down with it.
   */
  private async findUpload(uploads: Uploads, hash: NonNullable<AvatarQuery['hash']>) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`blob store gave no answer within ${this.d.storeTimeoutMs}ms`)),
        this.d.storeTimeoutMs,
      );
    });
    const lookup = uploads.find(hash.hex, hash.kind);
    try {
      return await Promise.race([lookup, late]);
    } catch (err) {
      lookup.catch(() => {}); // a late failure has nobody left to tell
      this.d.onStoreError?.(err);
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  private image(
    q: AvatarQuery,
    client: string,
    source: Source,
    versionKey: string,
    lastModified: Date,
    original: () => Promise<Buffer>,
    upload: string | null = null,
  ): Outcome {
    return this.cached(
      q,
      client,
      source,
      versionKey,
      lastModified,
      async () => resizeImage(await original(), q.size, q.format, this.d.maxPixels),
      upload,
    );
  }

  /** Drops every rendering of the uploaded image `sha256` from memory and disk (writes under way too). */
  evict(sha256: string): void {
    const keys = this.renderedFrom.get(sha256);
    if (!keys) return;
    this.renderedFrom.delete(sha256);
    for (const key of keys) {
      this.etags.delete(key);
      this.d.cache.delete(key);
    }
  }

  private track(upload: string, key: string): void {
    let keys = this.renderedFrom.get(upload);
    if (!keys) {
      if (this.renderedFrom.size >= TRACKED_UPLOADS)
        this.renderedFrom.delete(this.renderedFrom.keys().next().value as string);
      keys = new Set();
      this.renderedFrom.set(upload, keys);
    }
    keys.add(key);
  }

  private cached(
    q: AvatarQuery,
    client: string,
    source: Source,
    versionKey: string,
    lastModified: Date | null,
    render: () => Promise<Buffer>,
    upload: string | null = null,
  ): Outcome {
    const key = `${RENDER_REV}|${versionKey}|${q.size}|${q.format}`;
    let etag = this.etags.get(key);
    if (etag === undefined) {
      etag = `"${createHash('sha256').update(key).digest('base64url').slice(0, 27)}"`;
      // Hashing is the biggest cost of a cached hit after the framework's; remember recent ones.
      if (this.etags.size >= ETAG_MEMO) this.etags.clear();
      this.etags.set(key, etag);
    }
    return {
      kind: 'image',
      source,
      etag,
      contentType: MIME[q.format],
      lastModified: lastModified && !Number.isNaN(lastModified.getTime()) ? lastModified : null,
      body: () => {
        if (upload) this.track(upload, key);
        return this.bytes(key, client, render);
      },
      hit: () => {
        const h = this.d.cache.memory(key);
        if (!h) return undefined;
        if (upload) this.track(upload, key);
        this.d.onCache?.('memory');
        return h.body;
      },
      holds: (body) => {
        if (!this.d.cache.holds(key, body)) return false;
        if (upload) this.track(upload, key);
        this.d.onCache?.('memory');
        return true;
      },
    };
  }

  private async bytes(key: string, client: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const hit = await this.d.cache.get(key);
    if (hit) {
      this.d.onCache?.(hit.tier);
      return hit.body;
    }
    return this.flights.run(key, () => this.load(key, client, render));
  }

  private async load(key: string, client: string, render: () => Promise<Buffer>): Promise<Buffer> {
    this.d.onCache?.('render');
    const started = process.hrtime.bigint();
    const out = await this.renders.run(client, render);
    this.d.onRender?.(Number(process.hrtime.bigint() - started) / 1e9);
    void this.d.cache.put(key, out, null);
    return out;
  }
}

// Orchestration without HTTP: sources in order with fall-through, memory then disk cache, one
// render per key at a time (single flight), and fair bounded queues around sharp and upstream fetches.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { Cache } from '../../infra/cache/cache.ts';
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { AppError } from '../../infra/http/errors.ts';
import { FairQueue, QueueFull, type QueueStats } from '../../infra/limits/fair-queue.ts';
import { CONTENT_TYPES, type Format, type ImageOptions, optionsKey } from './params.ts';
import { type Placeholder, placeholderKey, renderPlaceholder } from './placeholder.ts';
import { type RenderConfig, render } from './render.ts';
import type { Catalogue, Category, ImageSource, SourceName } from './source.ts';

export interface ServiceConfig extends RenderConfig {
  concurrency: number;
  queueLength: number;
  /** Percent of the render slots and of the queue one client may hold. */
  clientShare: number;
  cacheMemoryBytes: number;
  cacheDiskBytes: number;
}

/** Hooks for metrics, so this file stays framework-free. */
export interface ServiceEvents {
  sourceFailed?(source: SourceName, err: unknown): void;
  served?(source: SourceName, cache: 'memory' | 'disk' | 'miss'): void;
  rendered?(source: SourceName, seconds: number): void;
  pool?(stats: QueueStats): void;
}

export interface Served {
  body: Buffer;
  contentType: string;
  etag: string;
  id: string;
  source: SourceName;
  width: number;
  height: number;
  cache: 'memory' | 'disk' | 'miss';
  /** Served by a later source because an earlier one failed. */
  degraded: boolean;
}

export class NoSourceError extends Error {
  /** The last source that failed was a remote one (the upstream origin): its fault, 502. */
  readonly upstream: boolean;
  constructor(upstream = false) {
    super('no image source could serve the request');
    this.name = 'NoSourceError';
    this.upstream = upstream;
  }
}

/** A category no source has (404). */
export class UnknownCategoryError extends Error {
  constructor() {
    super('no such image category');
    this.name = 'UnknownCategoryError';
  }
}

type Meta = { id: string; width: number; height: number; etag: string; type: string };
/** Processed images (with their Meta) and, disk only, fetched upstream originals (no meta). */
export type ImageCache = Cache<Meta | Record<string, never>>;

export class ImageService {
  readonly cache: ImageCache;
  readonly pool: FairQueue;
  /** Upstream fetches: their own bounded queue, so waiting on the network holds no sharp slot. */
  readonly fetches: FairQueue;
  private readonly flights = new SingleFlight<{ body: Buffer; meta: Meta }>();
  private readonly fingerprint: string;
  sources: ImageSource[] = [];

  private readonly c: ServiceConfig;
  private readonly logger: Logger;
  private readonly events: ServiceEvents;
  constructor(c: ServiceConfig, dataDir: string, logger: Logger, events: ServiceEvents = {}) {
    this.c = c;
    this.logger = logger;
    this.events = events;
    this.cache = new Cache({
      name: 'image',
      dir: join(dataDir, 'image-cache'),
      memoryBytes: c.cacheMemoryBytes,
      diskBytes: c.cacheDiskBytes,
      onError: (err) => logger.warn({ err }, 'image disk cache error'),
    });
    const clientShare = c.clientShare / 100;
    this.pool = new FairQueue({
      concurrency: c.concurrency,
      queueLength: c.queueLength,
      clientShare,
      ...(events.pool ? { onChange: events.pool } : {}),
    });
    this.fetches = new FairQueue({ concurrency: c.concurrency * 4, queueLength: c.queueLength, clientShare });
    // Settings that change output bytes for the same request belong in every key.
    this.fingerprint = `q${c.quality}.${c.crop}.${c.defaultWidth}x${c.defaultHeight}.${c.maxWidth}.${c.maxHeight}.${c.maxPixels}`;
  }

  /**
   * Serves one request for `client` (its addressGroup: the fair share is counted per client); throws
   * QueueFull (503), UnknownCategoryError (404) or NoSourceError (all sources failed). A category
   * request is served only by the sources that have that category: no fall-through to other images.
   */
  async serve(o: ImageOptions, client: string): Promise<Served> {
    const category = o.category ?? undefined;
    const sources = category === undefined ? this.sources : this.withCategory(category);
    if (sources.length === 0) throw new UnknownCategoryError();
    let remoteFailed = false;
    for (const [i, src] of sources.entries()) {
      try {
        const entry = src.pick(o.id, category);
        const key = `${entry.key}|${optionsKey(o)}|${this.fingerprint}`;
        // A memory hit is answered without an await; only the other tiers go through get().
        const found = this.cache.memory(key) ?? (await this.cache.get(key));
        const cache: Served['cache'] = found?.tier ?? 'miss';
        let hit = found && { body: found.body, meta: found.entry.meta as Meta };
        if (!hit) {
          // Concurrent requests for one key share one render, queued under the first caller's share.
          hit = await this.flights.run(key, async () => {
            const started = process.hrtime.bigint();
            const out = src.remote
              ? await this.fetches
                  .run(client, () => src.load(entry))
                  .then((l) => this.pool.run(client, () => render(l, o, this.c)))
              : await this.pool.run(client, async () => render(await src.load(entry), o, this.c));
            this.events.rendered?.(src.name, Number(process.hrtime.bigint() - started) / 1e9);
            const etag = `"${createHash('sha256').update(out.body).digest('base64url').slice(0, 27)}"`;
            const meta: Meta = {
              id: entry.id,
              width: out.width,
              height: out.height,
              etag,
              type: CONTENT_TYPES[o.format],
            };
            void this.cache.put(key, out.body, meta);
            return { body: out.body, meta };
          });
        }
        this.events.served?.(src.name, cache);
        const m = hit.meta;
        return {
          body: hit.body,
          contentType: m.type,
          etag: m.etag,
          id: m.id,
          source: src.name,
          width: m.width,
          height: m.height,
          cache,
          degraded: i > 0,
        };
      } catch (err) {
        // AppError: the server cannot render at all (no sharp); another source would fail the same way.
        if (err instanceof QueueFull || err instanceof AppError) throw err;
        this.events.sourceFailed?.(src.name, err);
        remoteFailed = src.remote === true;
        this.logger.warn(
          { source: src.name, err: { message: (err as Error).message } },
          'image source failed; trying the next',
        );
      }
    }
    throw new NoSourceError(remoteFailed);
  }

  /**
   * A ?text= placeholder of w x h, cached and rendered like any image (the same cache, single
   * flight and fair render queue); throws QueueFull.
   */
  async placeholder(
    p: Placeholder,
    w: number,
    h: number,
    format: Format,
    client: string,
  ): Promise<{ body: Buffer; etag: string }> {
    const key = `placeholder|${placeholderKey(p)}|${w}x${h}.${format}|${this.fingerprint}`;
    const found = this.cache.memory(key) ?? (await this.cache.get(key));
    if (found) return { body: found.body, etag: (found.entry.meta as Meta).etag };
    const out = await this.flights.run(key, async () => {
      const body = await this.pool.run(client, () => renderPlaceholder(p, w, h, format, this.c.quality));
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      const meta: Meta = { id: 'placeholder', width: w, height: h, etag, type: CONTENT_TYPES[format] };
      void this.cache.put(key, body, meta);
      return { body, meta };
    });
    return { body: out.body, etag: out.meta.etag };
  }

  private withCategory(name: string): ImageSource[] {
    return this.sources.filter((s) => s.hasCategory?.(name));
  }

  /** Every category of every source, by name. */
  categories(): Category[] {
    return this.sources.flatMap((s) => s.categories?.() ?? []);
  }

  /**
   * The catalogue of the first source that has one to show, or of the first that has `category`
   * (throws UnknownCategoryError when none has it).
   */
  list(offset: number, limit: number, category?: string): Catalogue & { source: SourceName | null } {
    const sources = category === undefined ? this.sources : this.withCategory(category);
    if (sources.length === 0 && category !== undefined) throw new UnknownCategoryError();
    for (const src of sources) {
      const c = src.list(offset, limit, category);
      if (c.total > 0 || category !== undefined) return { ...c, source: src.name };
    }
    return { total: 0, items: [], source: null };
  }

  /** Closes the sources and lets pending cache writes finish (a clean stop keeps its renders). */
  async close(): Promise<void> {
    for (const s of this.sources) s.close?.();
    await this.cache.idle();
  }
}

// The render pipeline of the Kroki API: one entry for every language. PlantUML languages go to the
// JVM engine (its own cache entries and admission, engine.ts); the others are admitted through one
// fair queue (a client's share of the render threads), rendered once per key (single flight) in a
// worker thread or a system program under the render timeout, kept in the same shared cache as
// PlantUML's (syntax errors too: the same source fails the same way) and rasterised to PNG/JPEG
// from the SVG with sharp where Kroki offers those formats.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Cache } from '../../../infra/cache/cache.ts';
import { SingleFlight } from '../../../infra/cache/single-flight.ts';
import { FairQueue } from '../../../infra/limits/fair-queue.ts';
import { loadSharp } from '../../../infra/media/sharp.ts';
import { inSpan } from '../../../infra/observe/tracing.ts';
import type { RenderedMeta } from '../cache.ts';
import { BrowserUnavailable } from '../engines/browser-pool.ts';
import { commandAvailability, runCommand } from '../engines/commands.ts';
import { BROWSERLESS, mermaidType } from '../engines/mermaid.ts';
import {
  type MermaidBrowser,
  type MermaidBrowserOptions,
  mermaidBrowser,
} from '../engines/mermaid-browser.ts';
import { ThreadCrashed, ThreadPool, type ThreadReply } from '../engines/thread-pool.ts';
import type { Language } from './languages.ts';
import { packageVersion } from './packages.ts';

export interface DiagramJob {
  lang: Language;
  format: string;
  source: string;
  options: Record<string, string>;
}

export interface Outcome {
  ok: boolean;
  body: Buffer;
  /** Syntax error: the engine's message and line (1-based) where it gives one. */
  message?: string;
  line?: number;
  cached: boolean;
}

/** The language cannot be rendered here (engine not installed, program missing): 503. */
export class EngineMissing extends Error {}
/** The engine failed on this source (not a syntax error): 422. */
export class EngineFailed extends Error {}
/** This engine does not render this kind of diagram (a Mermaid type that needs a browser): 422. */
export class Unsupported extends Error {}
/** The result would exceed a size cap (PNG pixels): 413. */
export class TooLarge extends Error {}

export interface RendererOptions {
  threads: number;
  threadHeapMb: number;
  threadIdleMs: number;
  timeoutMs: number;
  queueSize: number;
  clientShare: number;
  /** Largest PNG width/height. */
  limitSize: number;
  cache: Cache<RenderedMeta>;
  log: Logger;
  /** The headless-browser pool for the Mermaid types beautiful-mermaid does not draw; absent = off. */
  browser?: Omit<MermaidBrowserOptions, 'timeoutMs' | 'log'>;
}

export interface Availability {
  available: boolean;
  version?: string;
  reason?: string;
}

const RASTER = new Set(['png', 'jpeg']);

export class DiagramRenderer {
  readonly pool: ThreadPool;
  private readonly admission: FairQueue;
  private readonly flights = new SingleFlight<Outcome>();
  private readonly o: RendererOptions;
  private readonly versions = new Map<string, Availability>();
  /** Off (null) unless configured; it starts no browser before a diagram needs one. */
  readonly browser: MermaidBrowser | null;
  /** Its slots: a client's share of them and of its queue, like the render threads'. */
  private readonly browserAdmission: FairQueue | null;

  constructor(o: RendererOptions) {
    this.o = o;
    this.browser = o.browser ? mermaidBrowser({ ...o.browser, timeoutMs: o.timeoutMs, log: o.log }) : null;
    this.browserAdmission = o.browser
      ? new FairQueue({
          concurrency: o.browser.browsers * o.browser.pages,
          queueLength: o.queueSize,
          clientShare: o.clientShare / 100,
        })
      : null;
    this.pool = new ThreadPool({
      size: o.threads,
      timeoutMs: o.timeoutMs,
      heapMb: o.threadHeapMb,
      idleMs: o.threadIdleMs,
      // D2's Go WebAssembly takes seconds to start: loaded only by a thread that gets a D2 diagram.
      preload: (engine) => engine !== 'd2',
      onEvent: (event, detail) =>
        o.log[event === 'spawn' || event === 'exit' ? 'debug' : 'warn'](detail, `render thread ${event}`),
    });
    this.admission = new FairQueue({
      concurrency: o.threads,
      queueLength: o.queueSize,
      clientShare: o.clientShare / 100,
    });
  }

  stats() {
    return { ...this.pool.stats(), queued: this.admission.stats.queued };
  }

  /** Whether a non-PlantUML language can render here, and its engine's version (cached). */
  availability(lang: Language): Availability {
    let a = this.versions.get(lang.engine);
    if (!a) {
      if (lang.kind === 'command') a = commandAvailability(lang.engine);
      else {
        const v = lang.pkg ? packageVersion(lang.pkg) : null;
        a = v
          ? { available: true, version: v }
          : {
              available: false,
              reason: `the npm package ${lang.pkg} is not installed (optional dependency)`,
            };
      }
      this.versions.set(lang.engine, a);
    }
    return a;
  }

  /** Whether `j` is a Mermaid diagram for the browser pool (on, and a type beautiful-mermaid does not draw). */
  private inBrowser(j: DiagramJob): boolean {
    return this.browser !== null && j.lang.engine === 'mermaid' && !BROWSERLESS.has(mermaidType(j.source));
  }

  /** The version of what draws `j` (cache keys and ETags change with it). */
  private version(j: DiagramJob): string {
    if (this.inBrowser(j)) return `mermaid ${this.browser!.version}`;
    return this.availability(j.lang).version ?? '';
  }

  private key(j: DiagramJob, format: string): string {
    return createHash('sha256')
      .update(
        JSON.stringify(['kroki', j.lang.type, j.lang.engine, this.version(j), format, j.options, j.source]),
      )
      .digest('hex');
  }

  /** `"<engine version hash><md5 of type, options and source>"`: the URL carries the format. */
  etag(j: DiagramJob): string {
    const v = this.version(j);
    const h = createHash('md5').update(`${j.lang.type}\n${v}\n${JSON.stringify(j.options)}\n`);
    return `"k${h.update(j.source).digest('base64url')}"`;
  }

  /** The cached outcome of `j`, or undefined; never renders. */
  async cached(j: DiagramJob): Promise<Outcome | undefined> {
    const a = this.availability(j.lang);
    if (!a.available) return undefined;
    const key = this.key(j, j.format);
    const hit = this.o.cache.memory(key) ?? (await this.o.cache.get(key));
    return hit ? fromMeta(hit.entry.meta, hit.body, true) : undefined;
  }

  /** Renders `j` for `client` (its addressGroup), in a `render <type>` span when traced. */
  render(j: DiagramJob, client: string): Promise<Outcome> {
    const attrs = { 'devutil.render.language': j.lang.type, 'devutil.render.format': j.format };
    return inSpan(`render ${j.lang.type}`, attrs, async (span) => {
      const out = await this.renderOnce(j, client);
      span?.set({ 'devutil.render.cached': out.cached, 'devutil.render.ok': out.ok });
      return out;
    });
  }

  private async renderOnce(j: DiagramJob, client: string): Promise<Outcome> {
    const a = this.availability(j.lang);
    if (!a.available) throw new EngineMissing(`${j.lang.type} is not available on this server: ${a.reason}`);
    const key = this.key(j, j.format);
    const hit = this.o.cache.memory(key) ?? (await this.o.cache.get(key));
    if (hit) return fromMeta(hit.entry.meta, hit.body, true);
    return this.flights.run(key, async () => {
      const out = RASTER.has(j.format) ? await this.raster(j, client) : await this.renderSvg(j, client);
      void this.o.cache.put(key, out.body, metaOf(out));
      return out;
    });
  }

  private async raster(j: DiagramJob, client: string): Promise<Outcome> {
    const svg = await this.render({ ...j, format: 'svg' }, client);
    if (!svg.ok) return { ...svg, cached: false };
    const body = await this.admission.run(client, () => rasterise(svg.body, j.format, this.o.limitSize));
    return { ok: true, body, cached: false };
  }

  private async renderSvg(j: DiagramJob, client: string): Promise<Outcome> {
    const reply = this.inBrowser(j)
      ? await this.browserAdmission!.run(client, () => this.browser!.render(j.source)).catch(
          (err: unknown) => {
            throw err instanceof BrowserUnavailable ? new EngineMissing(err.message) : err;
          },
        )
      : await this.admission.run(client, async (): Promise<ThreadReply> => {
          if (j.lang.kind === 'command') return runCommand(j.lang.engine, j.source, this.o.timeoutMs);
          return this.pool.run({
            engine: j.lang.engine,
            source: j.source,
            format: 'svg',
            options: j.options,
          });
        });
    if (reply.ok) return { ok: true, body: Buffer.from(reply.body), cached: false };
    if (reply.kind === 'syntax')
      return {
        ok: false,
        body: Buffer.alloc(0),
        message: reply.message,
        ...(reply.line !== undefined ? { line: reply.line } : {}),
        cached: false,
      };
    if (reply.kind === 'unsupported') throw new Unsupported(reply.message);
    this.o.log.warn({ type: j.lang.type, message: reply.message }, 'diagram engine failed');
    throw new EngineFailed(`the ${j.lang.type} engine failed on this diagram: ${reply.message}`);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.browser?.close()]);
  }
}

export { ThreadCrashed };

function metaOf(o: Outcome): RenderedMeta {
  return {
    status: o.ok ? 'ok' : 'error',
    description: '',
    errors: o.ok ? [] : [{ line: o.line ?? 0, message: o.message ?? 'Syntax error' }],
  };
}

function fromMeta(meta: RenderedMeta, body: Buffer, cached: boolean): Outcome {
  if (meta.status === 'ok') return { ok: true, body, cached };
  const e = meta.errors[0];
  return {
    ok: false,
    body,
    message: e?.message ?? 'Syntax error',
    ...(e?.line ? { line: e.line } : {}),
    cached,
  };
}

/**
 * PNG (or JPEG) from the SVG with sharp (librsvg), scaled down to fit `limit` pixels on each side:
 * a giant canvas costs at most limit x limit pixels, never the memory its SVG size asks for.
 */
export async function rasterise(svg: Buffer, format: string, limit: number): Promise<Buffer> {
  const sharp = await loadSharp();
  let meta: { width?: number | undefined; height?: number | undefined };
  try {
    meta = await sharp(svg, { limitInputPixels: false }).metadata();
  } catch {
    throw new EngineFailed('the SVG of this diagram cannot be rasterised');
  }
  const side = Math.max(meta.width ?? 1, meta.height ?? 1);
  // Density 72 is the SVG's own size; the engines' SVGs are small, so scale up to 2x where it fits.
  const scale = Math.min(2, limit / side);
  if (scale * side < 1) throw new TooLarge('the diagram is too large to rasterise');
  const img = sharp(svg, { density: Math.max(1, 72 * scale), limitInputPixels: limit * limit * 4 }).timeout({
    seconds: 10,
  });
  try {
    if (format === 'jpeg')
      return await img.flatten({ background: '#ffffff' }).jpeg({ quality: 90 }).toBuffer();
    return await img.png().toBuffer();
  } catch (err) {
    throw new EngineFailed(`rasterising failed: ${err instanceof Error ? err.message.slice(0, 200) : err}`);
  }
}

// The render pipeline of the Kroki API: one entry for every language. PlantUML languages go to the
// JVM engine (its own cache entries and admission, engine.ts); the others are admitted through one
// fair queue (a client's share of the render slots), rendered once per key (single flight) in a
// render process or a system program under the render timeout and the kernel's bounds, kept in
// the same shared cache as PlantUML's (syntax errors too: the same source fails the same way) and
// rasterised to PNG/JPEG from the SVG (in a render process too) where Kroki offers those formats.
// Suspects (a source or client whose render timed out, crashed or ran out of memory; the registry
// is shared with the PlantUML engine) are served by a quarantine lane instead: one low-priority
// render process and its own small queue, so they never hold a main slot again.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Cache } from '../../../infra/cache/cache.ts';
import { SingleFlight } from '../../../infra/cache/single-flight.ts';
import { installLine, missingPackageMessage, packageVersion } from '../../../infra/config/extras.ts';
import { FairQueue } from '../../../infra/limits/fair-queue.ts';
import { Suspects } from '../../../infra/limits/suspects.ts';
import { inSpan } from '../../../infra/observe/tracing.ts';
import type { RenderedMeta } from '../cache.ts';
import { type BpmnBrowser, bpmnBrowser } from '../engines/bpmn-browser.ts';
import { type BrowserPool, BrowserUnavailable } from '../engines/browser-pool.ts';
import { type BrowserSettings, settingsPool } from '../engines/browser-settings.ts';
import { commandAvailability, runCommand } from '../engines/commands.ts';
import { BROWSERLESS, mermaidType } from '../engines/mermaid.ts';
import { type MermaidBrowser, mermaidBrowser } from '../engines/mermaid-browser.ts';
import { type PoolEvent, ProcessPool } from '../engines/process-pool.ts';
import {
  QUARANTINE_NICE,
  RENDER_NICE,
  RenderCrashed,
  type RenderJob,
  type RenderReply,
  RenderTimeout,
} from '../engines/render-job.ts';
import { localOnly } from '../engines/svg-refs.ts';
import type { Language } from './languages.ts';

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
  /** Render processes rendering at once. */
  processes: number;
  /** Warm idle render processes kept beside the busy ones. */
  spares: number;
  /** V8 heap cap of a render process (MiB). */
  heapMb: number;
  /** Memory one render may add to its process, and a system program may use (bytes). */
  memoryBytes: number;
  /** Largest answer of an engine (bytes). */
  maxOutputBytes: number;
  idleMs: number;
  timeoutMs: number;
  queueSize: number;
  clientShare: number;
  /** Largest PNG width/height. */
  limitSize: number;
  cache: Cache<RenderedMeta>;
  log: Logger;
  /** The headless-browser pool for the Mermaid types beautiful-mermaid does not draw and BPMN; absent = off. */
  browser?: Omit<BrowserSettings, 'timeoutMs' | 'log'> & {
    /** Largest Mermaid source (Mermaid's maxTextSize). */
    maxSource: number;
  };
  /** Without `browser`: why there is none and how to get one (the 422 of those types says it). */
  noBrowser?: string;
  /** Who goes to the quarantine lane (shared with the PlantUML engine); absent or off = no lane. */
  suspects?: Suspects;
  /** Every render process event, by lane (metrics). */
  onEvent?: (event: PoolEvent, lane: 'main' | 'quarantine') => void;
}

export interface Availability {
  available: boolean;
  version?: string;
  reason?: string;
}

const RASTER = new Set(['png', 'jpeg']);
const BPMN_OFF =
  'BPMN is drawn by bpmn-js, which needs a browser: install Chromium (found on PATH at start) or set DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM to its path (not off); the same browser serves the Mermaid types that need one';
/** A quarantine process exits after this long without suspects' work. */
const QUARANTINE_IDLE_MS = 60_000;

/** A render lane: its admission (a client's share) and the processes behind it. */
interface Lane {
  admission: FairQueue;
  pool: ProcessPool;
  nice: number;
}

export class DiagramRenderer {
  /** The main render processes. */
  readonly pool: ProcessPool;
  private readonly main: Lane;
  /** Suspects' lane: one process at nice 19, started when a suspect's diagram comes. */
  private readonly quarantine: Lane | null;
  private readonly flights = new SingleFlight<Outcome>();
  private readonly o: RendererOptions;
  private readonly versions = new Map<string, Availability>();
  private readonly detecting = new Map<string, Promise<void>>();
  /**
   * The one browser pool (one Chromium) whose pages draw Mermaid and BPMN alike: off (null) unless
   * configured; it starts no browser before a diagram needs one.
   */
  readonly browserPool: BrowserPool | null;
  /** Mermaid's pages in it; null = off. */
  readonly browser: MermaidBrowser | null;
  /** BPMN's pages in it (bpmn-js draws in a browser only); null = off. */
  private readonly bpmn: BpmnBrowser | null;
  /** Its slots, shared by Mermaid and BPMN: a client's share of them and of its queue, like the render threads'. */
  private readonly browserAdmission: FairQueue | null;

  constructor(o: RendererOptions) {
    this.o = o;
    const browsers = o.browser ? settingsPool({ ...o.browser, timeoutMs: o.timeoutMs, log: o.log }) : null;
    this.browserPool = browsers;
    this.browser = browsers ? mermaidBrowser(browsers, { maxSource: o.browser!.maxSource }) : null;
    this.bpmn = browsers ? bpmnBrowser(browsers) : null;
    this.browserAdmission = o.browser
      ? new FairQueue({
          concurrency: o.browser.browsers * o.browser.pages,
          queueLength: o.queueSize,
          clientShare: o.clientShare / 100,
        })
      : null;
    const pool = (lane: 'main' | 'quarantine') =>
      new ProcessPool({
        size: lane === 'main' ? o.processes : 1,
        spares: lane === 'main' ? o.spares : 0,
        timeoutMs: o.timeoutMs,
        // A cold process's engine load is the server's work, not the diagram's: Mermaid's (beautiful-
        // mermaid, ELK and Mermaid's parser) took over a minute on a 2-core machine at load 40.
        loadTimeoutMs: Math.max(120_000, o.timeoutMs),
        heapMb: o.heapMb,
        memoryBytes: o.memoryBytes,
        maxOutputBytes: o.maxOutputBytes,
        idleMs: lane === 'main' ? o.idleMs : QUARANTINE_IDLE_MS,
        nice: lane === 'main' ? RENDER_NICE : QUARANTINE_NICE,
        // D2's Go WebAssembly takes a second or more and 200 MiB to load, sharp (PNG) 20 MiB: only
        // a process that gets such a job loads them. A suspect's process loads only its engine.
        preload: (engine) => lane === 'main' && engine !== 'd2' && engine !== 'raster',
        onEvent: (event, detail) => {
          o.log[
            event === 'spawn' || event === 'exit' || event === 'cold' || event === 'collect'
              ? 'debug'
              : 'warn'
          ]({ ...detail, lane }, `render process ${event}`);
          o.onEvent?.(event, lane);
        },
      });
    const admission = (concurrency: number) =>
      new FairQueue({ concurrency, queueLength: o.queueSize, clientShare: o.clientShare / 100 });
    this.pool = pool('main');
    this.main = { admission: admission(o.processes), pool: this.pool, nice: RENDER_NICE };
    this.quarantine = o.suspects?.enabled
      ? { admission: admission(1), pool: pool('quarantine'), nice: QUARANTINE_NICE }
      : null;
  }

  stats() {
    const q = this.quarantine;
    return {
      ...this.pool.stats(),
      queued: this.main.admission.stats.queued + (q?.admission.stats.queued ?? 0),
      quarantined: q ? q.pool.stats().busy + q.admission.stats.queued : 0,
    };
  }

  /**
   * Finds out (once, without blocking) whether the system program of a `command` language is
   * installed; the other languages need nothing. Routes await it before availability().
   */
  detect(lang: Language): Promise<void> {
    if (lang.kind !== 'command' || this.versions.has(lang.engine)) return Promise.resolve();
    let d = this.detecting.get(lang.engine);
    if (!d) {
      d = commandAvailability(lang.engine).then((a) => {
        this.versions.set(lang.engine, a);
      });
      this.detecting.set(lang.engine, d);
    }
    return d;
  }

  /** Whether a non-PlantUML language can render here, and its engine's version (cached; detect() first). */
  availability(lang: Language): Availability {
    if (lang.engine === 'bpmn') {
      // Drawn from the viewer bundle (the page build's copy or the package's), not the package itself.
      if (!this.bpmn) return { available: false, reason: BPMN_OFF };
      if (this.bpmn.version) return { available: true, version: this.bpmn.version };
      return {
        available: false,
        reason: `the bpmn-js viewer bundle is missing (${installLine(['bpmn-js'])})`,
      };
    }
    let a = this.versions.get(lang.engine);
    if (!a) {
      if (lang.kind === 'command') return { available: false, reason: `${lang.engine}: not checked yet` };
      const v = lang.version ?? (lang.pkg ? packageVersion(lang.pkg) : null);
      a = v
        ? { available: true, version: v }
        : { available: false, reason: missingPackageMessage(lang.pkg ?? lang.engine) };
      this.versions.set(lang.engine, a);
    }
    return a;
  }

  /** Whether `j` is a Mermaid diagram only a browser draws (a type beautiful-mermaid does not). */
  private browserType(j: DiagramJob): boolean {
    return j.lang.engine === 'mermaid' && !BROWSERLESS.has(mermaidType(j.source));
  }

  /** Whether `j` is a Mermaid diagram for the browser pool (there is one, and `j` needs it). */
  private inBrowser(j: DiagramJob): boolean {
    return this.browser !== null && this.browserType(j);
  }

  /** The version of what draws `j` (cache keys and ETags change with it). */
  private version(j: DiagramJob): string {
    if (this.inBrowser(j)) return `mermaid ${this.browser!.version}`;
    if (j.lang.engine === 'bpmn') return `bpmn-js ${this.bpmn?.version ?? ''}`;
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
    await this.detect(j.lang);
    const a = this.availability(j.lang);
    if (!a.available) return undefined;
    const key = this.key(j, j.format);
    const hit = this.o.cache.memory(key) ?? (await this.o.cache.get(key));
    return hit ? fromMeta(hit.entry.meta, hit.body, true) : undefined;
  }

  /**
   * Whether the memory tier still holds `body` as `j`'s answer (counted as a hit when it does): the
   * fast lane's check before it repeats a cached diagram. The key is worked out once, here.
   */
  holds(j: DiagramJob, body: Buffer): () => boolean {
    const key = this.key(j, j.format);
    return () => this.o.cache.holds(key, body);
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
    await this.detect(j.lang);
    const a = this.availability(j.lang);
    if (j.lang.engine === 'bpmn' && !this.bpmn) throw new Unsupported(BPMN_OFF);
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
    const job = {
      engine: 'raster',
      source: svg.body.toString('utf8'),
      format: j.format,
      options: { limit: String(this.o.limitSize) },
    };
    return this.outcome(j, await this.inLane(j, client, job));
  }

  private async renderSvg(j: DiagramJob, client: string): Promise<Outcome> {
    if (j.lang.engine === 'bpmn') {
      const bpmn = this.bpmn!;
      const reply = await this.browserAdmission!.run(client, () => bpmn.render(j.source)).catch(
        (err: unknown) => {
          throw err instanceof BrowserUnavailable ? new EngineMissing(err.message) : err;
        },
      );
      return this.outcome(j, reply);
    }
    const job = { engine: j.lang.engine, source: j.source, format: 'svg', options: j.options };
    if (!this.browserType(j)) return this.outcome(j, await this.inLane(j, client, job));
    // Mermaid's parser checks it in a render process first: a mistake answers 400 with or without
    // a browser, and never takes a browser page.
    const checked = await this.inLane(j, client, { ...job, options: { ...j.options, check: '1' } });
    if (!checked.ok) return this.outcome(j, checked);
    if (!this.browser)
      throw new Unsupported(
        `Mermaid "${mermaidType(j.source).slice(0, 40)}" is drawn in a headless browser (this server draws flowchart, sequenceDiagram, classDiagram, stateDiagram, erDiagram and xychart-beta without one), and ${this.o.noBrowser ?? 'none is configured'}`,
      );
    const reply = await this.browserAdmission!.run(client, () => this.browser!.render(j.source)).catch(
      (err: unknown) => {
        throw err instanceof BrowserUnavailable ? new EngineMissing(err.message) : err;
      },
    );
    return this.outcome(
      j,
      reply.ok && typeof reply.body === 'string' ? { ...reply, body: localOnly(reply.body) } : reply,
    );
  }

  /**
   * Runs `job` in the main lane, or in quarantine for a suspect; a render that timed out, crashed
   * or ran out of memory makes its source (and, the second time, its client) a suspect.
   */
  private async inLane(j: DiagramJob, client: string, job: RenderJob): Promise<RenderReply> {
    const suspects = this.o.suspects;
    const source = () => Suspects.sourceKey(`${job.engine}\n${job.format}\n${job.source}`);
    const lane = this.quarantine && suspects?.suspect(client, source) ? this.quarantine : this.main;
    try {
      return await lane.admission.run(client, () =>
        j.lang.kind === 'command' && job.engine !== 'raster'
          ? runCommand(j.lang.engine, j.source, {
              timeoutMs: this.o.timeoutMs,
              memoryBytes: this.o.memoryBytes,
              maxOutputBytes: this.o.maxOutputBytes,
              nice: lane.nice,
            })
          : lane.pool.run(job),
      );
    } catch (err) {
      if (err instanceof RenderCrashed || (err instanceof RenderTimeout && this.ranAway(err)))
        suspects?.strike(client, source());
      throw err;
    }
  }

  /**
   * Whether a render that timed out was the diagram's doing: it used at least half its deadline in
   * CPU (or nobody knows). A small diagram on a machine too busy to run it is not a suspect.
   */
  private ranAway(err: RenderTimeout): boolean {
    return err.cpuMs === undefined || err.cpuMs >= this.o.timeoutMs / 2;
  }

  private outcome(j: DiagramJob, reply: RenderReply): Outcome {
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
    if (reply.kind === 'too-large') throw new TooLarge(reply.message);
    this.o.log.warn({ type: j.lang.type, message: reply.message }, 'diagram engine failed');
    throw new EngineFailed(`the ${j.lang.type} engine failed on this diagram: ${reply.message}`);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.quarantine?.pool.close(), this.browserPool?.close()]);
  }
}

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

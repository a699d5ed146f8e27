// The render service without HTTP: Java detection and the worker build (once), fair admission to
// the pool, the two-level cache (an entry that read URLs is used only while they are unchanged,
// includes.ts), request coalescing and the mapping of engine outcomes to typed failures.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Cache } from '../../../infra/cache/cache.ts';
import { SingleFlight } from '../../../infra/cache/single-flight.ts';
import { FairQueue } from '../../../infra/limits/fair-queue.ts';
import { Suspects } from '../../../infra/limits/suspects.ts';
import { inSpan } from '../../../infra/observe/tracing.ts';
import { probeBoundTools } from '../../../infra/process/bounds.ts';
import { fromHit, type Rendered, type RenderedMeta, renderCache, store } from '../cache.ts';
import { ClassArchive } from './cds.ts';
import { boundedDot } from './dot.ts';
import { encode64 } from './encoding.ts';
import type { IncludeFetcher } from './includes.ts';
import { buildWorker, defaultJar, detectJavaCached, type JavaInfo, NATIVE_TRIM_MS } from './java.ts';
import { type PoolEvent, RenderTimeout, WorkerPool } from './pool.ts';
import { type IncludeRecord, ownBody, type WorkerReply, type WorkerRequest } from './protocol.ts';
import { engineProfile, type FetchAnswer, JavaWorker, javaArgs, type WorkerOptions } from './worker.ts';

export interface EngineConfig {
  java: string;
  jar: string;
  workers: number;
  workerThreads: number;
  workerHeap: number;
  /** The heap each worker JVM starts with (-Xms); absent: Java's default. */
  workerInitialHeap?: number;
  /** Seconds without a render after which the main pool's JVMs exit (0 or absent = never). */
  workerIdleSec?: number;
  timeoutMs: number;
  queueSize: number;
  /** Percent of the render slots and of the queue one client may hold. */
  clientShare: number;
  securityProfile: string;
  urlAllowlist: readonly string[];
  limitSize: number;
  /** The include fetch deadline (includes.ts); the JVM waits a little longer for the answer. */
  includeTimeoutMs?: number;
  cacheMemory: number;
  cacheDisk: number;
  /** Start workers from a class-data sharing archive (made once in the data directory). */
  classArchive: boolean;
  /**
   * Where plantuml/ with the compiled worker, its class archive and the Java detection is kept
   * instead of the data directory ('' or absent: the data directory); servers may share one.
   */
  buildDir?: string;
  /**
   * Seconds a client or a source whose render timed out or ran out of memory is rendered by the
   * quarantine worker; 0 = no quarantine.
   */
  quarantineSec?: number;
  /** Committed memory one `dot` the engine runs may use (dot.ts); default 1 GiB. */
  renderMemory?: number;
}

const BROKE_TWICE =
  'the PlantUML engine failed to load or initialize one of its classes on this diagram, on two JVMs (see the server log)';

/** The pool a worker event comes from (a label of the events metric). */
export type PoolName = 'main' | 'quarantine';

/** Render threads of the quarantine worker: suspects share them, one JVM start at most under attack. */
const QUARANTINE_THREADS = 2;
/** The quarantine worker stops after this long without suspects' work. */
const QUARANTINE_IDLE_MS = 60_000;

export interface RenderRequest {
  op: 'render' | 'map';
  /** png, svg, txt, atxt, eps, epstext, pdf. */
  format: string;
  index: number;
  dark: boolean;
  source: string;
}

export interface RenderResult extends Rendered {
  cached: boolean;
}

/** Why the route cannot render at all (no Java, no JDK): 503. */
export class EngineUnavailable extends Error {}
/** A request the engine refuses as such: no diagram, bad index (400). */
export class BadDiagram extends Error {}
/** The engine threw while exporting (500, like the server). */
export class RenderFailed extends Error {}
/** The format needs a newer Java (501). */
export class NotSupported extends Error {}
/** The diagram needs more memory than a worker's heap (422). */
export class TooMuchMemory extends RenderFailed {}
/** The render broke the class state of a JVM, and of another one it was tried again on (422). */
export class EngineBroken extends RenderFailed {}

export interface EngineFacts {
  version: string;
  compileTime: number;
  java: string;
}

export class PlantumlEngine {
  readonly jar: string;
  /** Identifies the engine build without starting Java: the jar's path, size and mtime. */
  private readonly engineId: string;
  private javaInfo: Promise<JavaInfo> | null = null;
  private prepared: Promise<WorkerPool> | null = null;
  /** Aborted by close(): a worker build still running is killed rather than waited for. */
  private readonly stopping = new AbortController();
  private pool: WorkerPool | null = null;
  /**
   * A JVM of its own, at the lowest CPU priority, with a smaller heap and killed on a timeout, for
   * the renders of suspects (infra/limits/suspects.ts). Re-sending a runaway diagram then costs the
   * others nothing but the first deadline.
   */
  private quarantine: WorkerPool | null = null;
  private readonly quarantineAdmission: FairQueue;
  /**
   * Suspect clients and sources; the Kroki renderer shares it (a client that bombed any engine is a
   * suspect for every one).
   */
  readonly suspects: Suspects;
  readonly cache: Cache<RenderedMeta>;
  private archive: ClassArchive | null = null;
  /**
   * Admission to the workers: the pool dispatches to JVM threads, this decides who gets a thread
   * (a client's share, round-robin between clients) and refuses past the queue.
   */
  private readonly admission: FairQueue;
  private readonly flights = new SingleFlight<RenderResult>();
  /**
   * Bodies of renders kept in the memory tier only: a render goes to disk once it is used again
   * (see persist). Held weakly: an entry the memory tier dropped is forgotten with its body.
   */
  private readonly memoryOnly = new WeakSet<Buffer>();
  private languageText: Promise<string> | null = null;
  facts: EngineFacts | null = null;
  /** [engine version, md5 hex of it] for ETags. */
  private versionTag: [string, string] | undefined;
  /** Why prepare() failed, for /readyz. */
  prepareError: string | null = null;
  private closed = false;

  private readonly cfg: EngineConfig;
  readonly dataDir: string;
  private readonly log: Logger;
  private onPoolEvent: ((event: PoolEvent, pool: PoolName) => void) | null = null;
  /** Pool events from before anyone listened (a prelaunched engine's first spawns). */
  private earlyEvents: [PoolEvent, PoolName][] = [];
  /** Answers the engine's URL reads; set by the plugin (a prelaunched engine starts without one). */
  private includes: IncludeFetcher | null;
  constructor(cfg: EngineConfig, dataDir: string, log: Logger, includes: IncludeFetcher | null = null) {
    this.cfg = cfg;
    this.includes = includes;
    this.dataDir = dataDir;
    this.log = log;
    this.jar = cfg.jar || defaultJar();
    let id = this.jar;
    try {
      const s = statSync(this.jar);
      id += `:${s.size}:${s.mtimeMs}`;
    } catch {}
    this.engineId = id;
    this.admission = new FairQueue({
      concurrency: cfg.workers * cfg.workerThreads,
      queueLength: cfg.queueSize,
      clientShare: cfg.clientShare / 100,
    });
    this.quarantineAdmission = new FairQueue({
      concurrency: QUARANTINE_THREADS,
      queueLength: cfg.queueSize,
      clientShare: cfg.clientShare / 100,
    });
    this.cache = renderCache(dataDir, cfg, log);
    this.suspects = new Suspects({ windowMs: (cfg.quarantineSec ?? 0) * 1000 });
  }

  /** Receives every pool event (spawn, exit, timeout, crash), those that happened before too. */
  onEvent(fn: (event: PoolEvent, pool: PoolName) => void): void {
    this.onPoolEvent = fn;
    for (const [e, p] of this.earlyEvents.splice(0)) fn(e, p);
  }

  /** Hands over the include fetcher (the plugin builds it after a prelaunched engine started). */
  useIncludes(includes: IncludeFetcher): void {
    this.includes = includes;
  }

  private fetchInclude(url: string): Promise<FetchAnswer> {
    if (this.includes) return this.includes.fetch(url);
    return Promise.resolve({ status: 403, type: 'text/plain', body: Buffer.alloc(0), hash: 'refused' });
  }

  java(): Promise<JavaInfo> {
    this.javaInfo ??= detectJavaCached(this.cfg.java, this.cfg.buildDir || this.dataDir);
    return this.javaInfo;
  }

  stats(): ReturnType<WorkerPool['stats']> & { pids: number[] } {
    const s = this.pool?.stats() ?? { workers: 0, busy: 0, idle: 0, queued: 0, abandoned: 0 };
    return { ...s, queued: s.queued + this.admission.stats.queued, pids: this.pool?.pids() ?? [] };
  }

  /** Runs one worker request in a slot of `client`'s share (in quarantine for a suspect). */
  private async run(client: string, req: WorkerRequest): Promise<WorkerReply> {
    const pool = await this.prepare();
    const source = () => (req.source === undefined ? '' : Suspects.sourceKey(req.source));
    const quarantine = this.quarantine && this.suspects.suspect(client, source);
    const [admission, target] = quarantine
      ? [this.quarantineAdmission, this.quarantine!]
      : [this.admission, pool];
    try {
      const reply = await admission.run(client, () => target.run(req));
      // A render that broke a JVM even on its retry (pool.ts) counts like a runaway: a client that
      // does it twice, and the diagram, are rendered in quarantine for a while.
      if (reply.status === 'exception' && (reply.oom !== undefined || reply.broken !== undefined))
        this.suspects.strike(client, source());
      return reply;
    } catch (err) {
      if (err instanceof RenderTimeout) this.suspects.strike(client, source());
      throw err;
    }
  }

  /** Detects Java, builds the worker and creates the pool (once); throws EngineUnavailable. */
  prepare(): Promise<WorkerPool> {
    this.prepared ??= (async () => {
      // setpriv is asked about now, off the event loop, for the commands that use it later (the
      // Kroki engines' children); the bounded `dot` below needs only prlimit, so the JVM's start
      // does not wait for that child (30-40 ms of a cold start on a loaded machine).
      void probeBoundTools();
      const info = await this.java();
      if (!info.ok) throw new EngineUnavailable(info.reason ?? 'diagram rendering needs Java 17+');
      let classDir: string;
      try {
        classDir = await buildWorker(info, this.jar, this.cfg.buildDir || this.dataDir, this.stopping.signal);
      } catch (err) {
        throw new EngineUnavailable(err instanceof Error ? err.message : String(err));
      }
      if (this.closed) throw new EngineUnavailable('renderer is shutting down');
      // Its CPU bound is past the deadline at which the JVM kills the `dot` of an abandoned render.
      const dot = boundedDot(classDir, {
        cpuSeconds: this.cfg.timeoutMs / 1000 + 2,
        dataBytes: this.cfg.renderMemory ?? 1024 ** 3,
      });
      const base: WorkerOptions = {
        ...(dot ? { dot } : {}),
        java: this.cfg.java,
        jar: this.jar,
        classDir,
        heapBytes: this.cfg.workerHeap,
        ...(this.cfg.workerInitialHeap ? { initialHeapBytes: this.cfg.workerInitialHeap } : {}),
        ...(info.nativeTrim ? { trimNativeHeapMs: NATIVE_TRIM_MS } : {}),
        profile: this.cfg.securityProfile,
        urlAllowlist: this.cfg.urlAllowlist,
        limitSize: this.cfg.limitSize,
        threads: this.cfg.workerThreads,
        timeoutMs: this.cfg.timeoutMs,
        fetchTimeoutMs: (this.cfg.includeTimeoutMs ?? 10_000) + 2000,
        // Looked up per read: workers started before the plugin handed the fetcher over use it too.
        fetch: (url) => this.fetchInclude(url),
        onStderr: (line) => this.log.debug({ line }, 'plantuml worker stderr'),
      };
      const archive = this.cfg.classArchive
        ? new ClassArchive({
            dir: classDir,
            key: [this.engineId, info.home ?? '', info.version ?? ''],
            java: this.cfg.java,
            trainArgs: (out) => javaArgs({ ...base, trainArchive: out }),
            log: this.log,
          })
        : null;
      this.archive = archive;
      const spawn = (extra: Partial<WorkerOptions>) => {
        const shared = archive?.current();
        const w = new JavaWorker({ ...base, ...extra, ...(shared ? { sharedArchive: shared } : {}) });
        // Before the pool's own exit listener, so the replacement already starts without it.
        // Killed (SIGKILL: shutdown, the OOM killer, a timeout in quarantine) is not the archive's
        // fault; exiting (-Xshare:on refusing it) or crashing (SIGBUS on a damaged mapping) is.
        if (shared)
          w.onExit((e) => {
            if (!w.started && !this.closed && e.signal !== 'SIGKILL') archive?.reject(shared);
          });
        return w;
      };
      const events = (pool: PoolName) => (event: PoolEvent, detail: Record<string, unknown>) => {
        const level = event === 'spawn' || event === 'exit' || event === 'cold_wait' ? 'debug' : 'warn';
        this.log[level]({ ...detail, pool }, `plantuml worker ${event}`);
        if (this.onPoolEvent) this.onPoolEvent(event, pool);
        else if (this.earlyEvents.length < 64) this.earlyEvents.push([event, pool]);
      };
      this.pool = new WorkerPool({
        size: this.cfg.workers,
        threads: this.cfg.workerThreads,
        timeoutMs: this.cfg.timeoutMs,
        heapBytes: this.cfg.workerHeap,
        ...(this.cfg.workerIdleSec ? { idleExitMs: this.cfg.workerIdleSec * 1000 } : {}),
        spawn: () => spawn({}),
        retryStart: (w) => w.sharedArchive !== undefined && !this.closed,
        onHello: (h) => {
          this.facts ??= { version: h.version ?? '', compileTime: h.compileTime ?? 0, java: h.java ?? '' };
          // The first worker is up: now the one-time training run may take CPU (a no-op once made).
          archive?.train();
        },
        onEvent: events('main'),
      });
      if ((this.cfg.quarantineSec ?? 0) > 0) {
        const heapBytes = Math.min(this.cfg.workerHeap, 256 * 1024 ** 2);
        this.quarantine = new WorkerPool({
          size: 1,
          threads: QUARANTINE_THREADS,
          timeoutMs: this.cfg.timeoutMs,
          onTimeout: 'kill',
          heapBytes,
          idleExitMs: QUARANTINE_IDLE_MS,
          spawn: () => spawn({ threads: QUARANTINE_THREADS, heapBytes, nice: true }),
          retryStart: (w) => w.sharedArchive !== undefined && !this.closed,
          onEvent: events('quarantine'),
        });
      }
      // All workers start on first use (one after another), so the later ones warm up while the
      // first one serves, instead of starting cold in the middle of the first burst.
      this.pool.warm();
      return this.pool;
    })();
    this.prepared.catch((err: unknown) => {
      this.prepareError = err instanceof Error ? err.message : String(err);
    });
    return this.prepared;
  }

  /** Starts the workers in the background (prestart); failures surface on first use and in /readyz. */
  warm(): void {
    this.prepare().then(
      (p) => p.warm(),
      () => {},
    );
  }

  private key(r: RenderRequest): string {
    const profile = engineProfile(this.cfg.securityProfile);
    return createHash('sha256')
      .update(
        JSON.stringify([
          this.engineId,
          profile,
          this.cfg.urlAllowlist,
          this.cfg.limitSize,
          r.op,
          r.format,
          r.index,
          r.dark,
          r.source,
        ]),
      )
      .digest('hex');
  }

  /**
   * `"<md5hex(engine version)><PlantUML-base64 md5(source)>"`, like the server's
   * (docs/protocols/plantuml-server.md §5). A diagram that read URLs hashes what they held along with the
   * source, so its ETag changes with them.
   */
  etag(source: string, includes?: readonly IncludeRecord[]): string | null {
    if (!this.facts) return null;
    // The engine part is the same for every answer: hashed once per engine version.
    if (this.versionTag?.[0] !== this.facts.version)
      this.versionTag = [this.facts.version, createHash('md5').update(this.facts.version).digest('hex')];
    const v = this.versionTag[1];
    const h = createHash('md5').update(source);
    for (const i of includes ?? []) h.update(`\n${i.url}\n${i.hash}`);
    return `"${v}${encode64(h.digest())}"`;
  }

  /**
   * The ETag the answer for `r` would carry, decided without rendering: from the cached entry when
   * one exists (null if its includes changed: it must be rendered again), else from the source.
   */
  async currentEtag(r: RenderRequest): Promise<string | null> {
    const hit = (await this.cache.peek(this.key(r)))?.meta;
    if (!hit?.includes?.length) return this.etag(r.source);
    return (await this.fresh(hit)) ? this.etag(r.source, hit.includes) : null;
  }

  /**
   * Whether the memory tier still holds `body` as `r`'s answer (counted as a hit when it does): the
   * fast lane's check before it repeats a cached diagram. The key is worked out once, here.
   */
  holds(r: RenderRequest, body: Buffer): () => boolean {
    const key = this.key(r);
    return () => {
      // A render already on disk is only looked at (no hit object built for each repeat).
      if (!this.memoryOnly.has(body)) return this.cache.holds(key, body);
      const hit = this.cache.memory(key);
      if (hit?.body !== body) return false;
      this.persist(key, hit.entry.meta, body);
      return true;
    };
  }

  /**
   * Keeps a new render: in memory, and on disk only once it is asked for again (persist), like a
   * cache's minimum use count. Most renders are never asked for twice (the editor's preview of
   * every pause in typing, a bench's distinct diagrams), and writing each one to disk (two files
   * created and renamed) cost Node about as much CPU as the rest of its work for a render (issue 35:
   * 2.4-4.4 against 1.0-1.7 ms, every request a new diagram). A body too large for the memory tier
   * goes to disk at once; without a memory tier, every render does.
   */
  private keep(key: string, result: Rendered): void {
    const memoryOnly = result.body.length <= this.cache.memoryItemBytes;
    if (memoryOnly) this.memoryOnly.add(result.body);
    void store(this.cache, key, result, memoryOnly ? { disk: false } : {});
  }

  /** A memory hit on a render not on disk yet: written there now (once). */
  private persist(key: string, meta: RenderedMeta, body: Buffer): void {
    if (this.memoryOnly.delete(body)) void store(this.cache, key, { ...meta, body });
  }

  /** True unless the entry read URLs whose content has changed since (revalidates stale ones). */
  private async fresh(hit: RenderedMeta): Promise<boolean> {
    if (!hit.includes?.length) return true;
    return this.includes ? this.includes.current(hit.includes) : false;
  }

  /**
   * Renders for `client` (its addressGroup); a render already running for the same key is shared.
   * Traced as a `render plantuml` span.
   */
  render(r: RenderRequest, client: string): Promise<RenderResult> {
    const attrs = { 'devutil.render.language': 'plantuml', 'devutil.render.format': r.format };
    return inSpan('render plantuml', attrs, async (span) => {
      const out = await this.renderOnce(r, client);
      span?.set({ 'devutil.render.cached': out.cached });
      return out;
    });
  }

  private async renderOnce(r: RenderRequest, client: string): Promise<RenderResult> {
    const key = this.key(r);
    const hit = await this.cache.get(key);
    if (hit && (await this.fresh(hit.entry.meta))) {
      if (!this.facts) this.warm(); // the ETag needs the engine version
      if (hit.tier === 'memory') this.persist(key, hit.entry.meta, hit.body);
      return { ...fromHit(hit), cached: true };
    }
    return this.flights.run(key, () => this.renderMiss(key, r, client));
  }

  private async renderMiss(key: string, r: RenderRequest, client: string): Promise<RenderResult> {
    await this.prepare();
    if (r.format === 'pdf') {
      const info = await this.java();
      if ((info.major ?? 0) < 21)
        throw new NotSupported(
          `PDF needs Java 21+ (the engine's PDF library); this server runs Java ${info.version}`,
        );
    }
    const reply = await this.run(client, {
      op: r.op,
      format: r.format,
      index: r.index,
      dark: r.dark,
      source: r.source,
    });
    const result = this.outcome(reply);
    if (reply.includes?.length) result.includes = reply.includes;
    this.keep(key, result);
    return { ...result, cached: false };
  }

  private outcome(reply: WorkerReply): Rendered {
    switch (reply.status) {
      case 'ok':
      case 'error':
        return {
          status: reply.status,
          description: reply.description ?? '',
          errors: reply.errors,
          body: ownBody(reply.body),
        };
      case 'nodiagram':
        throw new BadDiagram('No UML diagram found');
      case 'badindex':
        throw new BadDiagram('No image at this index');
      default:
        if (reply.broken !== undefined) {
          this.log.warn({ exception: reply.broken, at: reply.at }, 'plantuml render broke a fresh JVM too');
          throw new EngineBroken(BROKE_TWICE);
        }
        if (reply.oom !== undefined)
          throw new TooMuchMemory(
            'the diagram needs more memory than a PlantUML worker may use (DEVUTIL_DIAGRAMS_WORKER_HEAP)',
          );
        this.log.warn({ exception: reply.exception, at: reply.at }, 'plantuml engine exception');
        throw new RenderFailed(
          'the PlantUML engine failed on this diagram in this format (try svg or png; txt of most diagram types needs Graphviz)',
        );
    }
  }

  /** One-line description (`/check`): uncached, cheap (parse only). */
  async check(source: string, client: string): Promise<string> {
    const reply = await this.run(client, { op: 'check', source });
    if (reply.status === 'nodiagram') return '(Error)';
    if (reply.broken !== undefined) throw new EngineBroken(BROKE_TWICE);
    if (reply.status === 'exception') throw new RenderFailed('the PlantUML engine failed on this diagram');
    return reply.description ?? '';
  }

  language(): Promise<string> {
    this.languageText ??= (async () => {
      // Asked once per process whoever asks first: counted as the server's own work.
      const reply = await this.run('', { op: 'language' });
      if (reply.status !== 'ok') throw new RenderFailed('the PlantUML engine failed');
      return reply.body.toString('utf8');
    })();
    this.languageText.catch(() => {
      this.languageText = null;
    });
    return this.languageText;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    if (this.prepared) await this.prepared.catch(() => null);
    await Promise.all([this.pool?.close(), this.quarantine?.close(), this.archive?.close()]);
    await this.cache.idle();
  }
}

/**
 * Starts the engine of a serving process before the server is built: Java detection and the
 * workers' JVMs run while Node loads and registers everything else. The plugin takes it over
 * (ctx.prelaunched).
 */
export function prelaunch(cfg: EngineConfig, dataDir: string, log: Logger): PlantumlEngine {
  const engine = new PlantumlEngine(cfg, dataDir, log);
  engine.warm();
  return engine;
}

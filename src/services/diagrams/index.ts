// Diagram rendering utility: a plantuml-server-compatible API on a warm pool of PlantUML JVMs.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { lazyImpl } from '../../infra/http/lazy.ts';
import { cspFor, editorCsp } from './csp.ts';
import { findChromium } from './engines/find-chromium.ts';
import type { RendererOptions } from './kroki/renderer.ts';
import { krokiRoutes } from './kroki/routes.ts';
import { editorRoutes } from './plantuml/editor.ts';
import { PlantumlEngine } from './plantuml/engine.ts';
import { IncludeFetcher } from './plantuml/includes.ts';
import { proxyRoute } from './plantuml/proxy.ts';
import { plantumlRoutes } from './plantuml/routes.ts';
import { engineProfile } from './plantuml/worker.ts';

const plantuml: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.diagrams;
  app.envelopes.mount('/plantuml', 'text');
  const events = ctx.metrics.counter(
    'devutil_plantuml_worker_events_total',
    'worker JVM events: spawn, exit, timeout (a render abandoned or, in quarantine, killed), crash (renders retried after their JVM died), retire (replaced while serving), unresponsive (killed), broken (a render found its class state broken: killed unless 3 were within a minute), cold_wait (a render that waited for a JVM start)',
    ['event', 'pool'],
  );
  const log = ctx.logger.child({ svc: 'diagrams' });
  const renderEvents = ctx.metrics.counter(
    'devutil_plantuml_render_events_total',
    'render process events: spawn, exit, timeout (killed at the deadline), crash (died under a render; memory=true: out of memory), cold (a render that waited for a process start), collect (an idle process collected its heap), by lane (main, quarantine)',
    ['event', 'lane'],
  );
  // URL includes are fetched here, not by the JVM: through the address guard, with validators.
  const http = createEgress({
    resolve: ctx.config.egress.resolve,
    policy: ctx.config.egress,
    timeoutMs: cfg.includeTimeoutMs,
    connections: 8,
  });
  const includes = new IncludeFetcher({
    http,
    profile: engineProfile(cfg.securityProfile),
    allowlist: cfg.urlAllowlist,
    freshMs: cfg.includeTtlSec * 1000,
    timeoutMs: cfg.includeTimeoutMs,
    maxBytes: cfg.includeMaxBytes,
    memoryBytes: cfg.includeCacheBytes,
    log,
  });
  // The engine main.ts prelaunched (its JVMs warming since before the server was built), or a new one.
  const engine =
    ctx.prelaunched.take<PlantumlEngine>('diagrams', ctx.dataDir) ??
    new PlantumlEngine(cfg, ctx.dataDir, log);
  engine.useIncludes(includes);
  engine.onEvent((event, pool) => events.inc({ event, pool }));
  ctx.metrics.caches.push(engine.cache);
  // Every other language (Kroki API): render processes and system programs, the same shared cache
  // and the same suspects as PlantUML's.
  // The browser pool (Mermaid and BPMN): the named Chromium, else the first one found (a file check, once).
  const chromium = cfg.mermaidChromium === 'off' ? null : cfg.mermaidChromium || findChromium();
  if (cfg.mermaidChromium !== 'off')
    log[chromium ? 'debug' : 'info'](
      { chromium },
      chromium
        ? 'browser pool (Mermaid and BPMN pages, one Chromium): started on the first diagram that needs it'
        : 'no Chromium found: the Mermaid types drawn in a browser (gantt, pie...) and BPMN answer 422',
    );
  const rendererOptions: RendererOptions = {
    processes: cfg.renderThreads,
    spares: cfg.renderSpares,
    heapMb: Math.round(cfg.renderThreadHeap / 1024 ** 2),
    memoryBytes: cfg.renderMemory,
    maxOutputBytes: cfg.maxOutput,
    idleMs: cfg.renderThreadIdleSec * 1000,
    suspects: engine.suspects,
    onEvent: (event, lane) => renderEvents.inc({ event, lane }),
    timeoutMs: cfg.timeoutMs,
    queueSize: cfg.queueSize,
    clientShare: cfg.clientShare,
    limitSize: cfg.limitSize,
    cache: engine.cache,
    log,
    ...(chromium
      ? {
          browser: {
            executable: chromium,
            browsers: cfg.mermaidBrowsers,
            pages: cfg.mermaidBrowserPages,
            idleMs: cfg.mermaidBrowserIdleSec * 1000,
            heapMb: Math.round(cfg.mermaidBrowserHeap / 1024 ** 2),
            sandbox: cfg.mermaidBrowserSandbox,
            maxSource: cfg.maxSourceBytes,
          },
        }
      : {
          noBrowser:
            cfg.mermaidChromium === 'off'
              ? 'the operator turned the browser pool off (DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM=off)'
              : 'no Chromium was found on this server: install one (Debian/Ubuntu: apt-get install chromium-headless-shell, the lightest, or chromium) or set DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM to the path of a Chromium/Chrome executable',
        }),
  };
  // The renderer and its engines (render processes, the browser pool) load with the first Kroki
  // request; none starts a process before a diagram needs it, so nothing is lost by waiting. Its
  // gauges below report an unloaded renderer as nothing running.
  const renderer = lazyImpl(
    'the diagram renderer',
    async () => new (await import('./kroki/renderer.ts')).DiagramRenderer(rendererOptions),
  );
  // Set at scrape time: a render queue filling up (or abandoned renders piling up) shows while it
  // happens, not at the next diagram answer.
  ctx.metrics.gauge('devutil_plantuml_workers', 'render workers by state', ['state'], (g) => {
    const s = engine.stats();
    g.set({ state: 'busy' }, s.busy);
    g.set({ state: 'idle' }, s.idle);
    g.set({ state: 'queued' }, s.queued);
    g.set({ state: 'abandoned' }, s.abandoned);
  });
  ctx.metrics
    .gauge('devutil_plantuml_queue_limit', 'renders that may wait for a worker before 503 (the queued cap)')
    .set(cfg.queueSize);
  // The name is from when the engines ran in worker threads (dashboards use it).
  ctx.metrics.gauge(
    'devutil_plantuml_render_threads',
    'render processes of the JavaScript/WebAssembly engines by state (quarantined: suspects rendering or waiting in their lane)',
    ['state'],
    (g) => {
      const t = renderer.value?.stats() ?? { busy: 0, processes: 0, queued: 0, quarantined: 0 };
      g.set({ state: 'busy' }, t.busy);
      g.set({ state: 'idle' }, t.processes - t.busy);
      g.set({ state: 'queued' }, t.queued);
      g.set({ state: 'quarantined' }, t.quarantined);
    },
  );
  ctx.metrics.gauge(
    'devutil_diagrams_browser_pages',
    'pages of the browser pool (Mermaid and BPMN) by state (queued: renders waiting for a page)',
    ['state'],
    (g) => {
      const s = renderer.value?.browserPool?.stats();
      g.set({ state: 'busy' }, s?.busy ?? 0);
      g.set({ state: 'idle' }, (s?.pages ?? 0) - (s?.busy ?? 0));
      g.set({ state: 'queued' }, s?.queued ?? 0);
    },
  );
  ctx.metrics.gauge(
    'devutil_diagrams_browser_kind_pages',
    'pages of the browser pool by the kind they draw (mermaid, bpmn) and state',
    ['kind', 'state'],
    (g) => {
      for (const kind of ['mermaid', 'bpmn']) {
        const s = renderer.value?.browserPool?.stats().kinds.get(kind);
        g.set({ kind, state: 'busy' }, s?.busy ?? 0);
        g.set({ kind, state: 'idle' }, (s?.pages ?? 0) - (s?.busy ?? 0));
        g.set({ kind, state: 'queued' }, s?.queued ?? 0);
      }
    },
  );
  ctx.metrics.gauge(
    'devutil_diagrams_browsers',
    'Chromium browsers running (one pool for every kind)',
    [],
    (g) => g.set(renderer.value?.browserPool?.stats().browsers ?? 0),
  );
  // The fast lane's repeats of cached diagrams are counted in plain numbers by status and added when
  // the counter is read: a labelled inc() hashes its label object on every call, per hit.
  const laneHits = new Map<number, number>();
  const diagrams = ctx.metrics.counter(
    'devutil_plantuml_diagrams_total',
    'diagram answers by cache use and status',
    ['cache', 'status'],
    (c) => {
      for (const [status, n] of laneHits) c.inc({ cache: 'hit', status: String(status) }, n);
      laneHits.clear();
    },
  );
  // Every SVG and HTML answer of the service (diagrams, error images, the editor) gets its CSP here,
  // so no route can forget it.
  const editor = editorCsp(ctx.urls.diagrams);
  app.addHook('onSend', (_req, reply, payload, done) => {
    const csp = cspFor(String(reply.getHeader('content-type') ?? ''), editor);
    if (csp) reply.header('content-security-policy', csp);
    done(null, payload);
  });
  app.addHook('onResponse', async (_req, reply) => {
    const cache = reply.getHeader('x-plantuml-cache');
    if (cache) diagrams.inc({ cache: String(cache), status: String(reply.statusCode) });
  });

  // Cheap and bounded: never compiles or starts a JVM, never holds /readyz past ~1 s (the first
  // `java -version` on a loaded machine can take longer; it is then reported as pending).
  ctx.readiness.add('plantuml', async () => {
    const pending = Symbol('pending');
    let timer: NodeJS.Timeout | undefined;
    const info = await Promise.race([
      engine.java(),
      new Promise<typeof pending>((r) => {
        timer = setTimeout(() => r(pending), 1000);
      }),
    ]).finally(() => clearTimeout(timer));
    if (info === pending) return { ok: true, detail: 'java check pending' };
    if (!info.ok) return { ok: false, detail: info.reason ?? 'diagram rendering needs Java 17+' };
    if (!info.javac)
      return { ok: false, detail: 'diagram rendering needs a Java 17+ JDK (javac not found, only a JRE)' };
    if (engine.prepareError) return { ok: false, detail: engine.prepareError };
    const s = engine.stats();
    return {
      ok: true,
      detail: `java ${info.version}; ${s.workers} workers up, ${s.busy} busy, ${s.queued} queued`,
    };
    // Optional: without Java only the diagram routes are down; the instance stays ready (degraded).
  }, ['diagrams']);
  app.addHook('onClose', async () => {
    await Promise.all([engine.close(), renderer.settled().then((r) => r?.close())]);
    await http.close();
  });
  // A listening server checks Java at once (cheap) so the first diagram does not wait for it;
  // inject()-only test servers never pay for it.
  app.addHook('onListen', async () => {
    if (cfg.prestart) engine.warm();
    else engine.java().catch(() => {});
  });

  // The fast lane's repeats of cached diagrams skip the onResponse hook above: counted as they go.
  const { server, handlers } = await plantumlRoutes(app, ctx, engine, (status) =>
    laneHits.set(status, (laneHits.get(status) ?? 0) + 1),
  );
  await krokiRoutes(app, ctx, engine, renderer, server);
  await proxyRoute(app, ctx, engine, handlers);
  await editorRoutes(app, ctx, handlers);
};

export default plantuml;

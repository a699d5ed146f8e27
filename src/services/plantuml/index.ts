// Diagram rendering utility: a plantuml-server-compatible API on a warm pool of PlantUML JVMs.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../infra/context.ts';
import { editorRoutes } from './editor.ts';
import { PlantumlEngine } from './engine.ts';
import { proxyRoute } from './proxy.ts';
import { plantumlRoutes } from './routes.ts';

const plantuml: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.plantuml;
  app.envelopes.mount('/plantuml', 'text');
  const events = ctx.metrics.counter(
    'devutil_plantuml_worker_events_total',
    'worker spawns, exits, timeouts and crashes',
    ['event'],
  );
  const engine = new PlantumlEngine(cfg, ctx.dataDir, ctx.logger.child({ svc: 'plantuml' }), (e) =>
    events.inc({ event: e }),
  );
  const workers = ctx.metrics.gauge('devutil_plantuml_workers', 'render workers by state', ['state']);
  const refresh = () => {
    const s = engine.stats();
    workers.set({ state: 'busy' }, s.busy);
    workers.set({ state: 'idle' }, s.idle);
    workers.set({ state: 'queued' }, s.queued);
  };
  app.addHook('onResponse', async () => refresh());

  ctx.readiness.add('plantuml', async () => {
    const info = await engine.java();
    if (!info.ok) return { ok: false, detail: info.reason ?? 'diagram rendering needs Java 17+' };
    // Builds the worker in the background so a JRE without javac shows up here too.
    engine.prepare().catch(() => {});
    if (engine.prepareError) return { ok: false, detail: engine.prepareError };
    const s = engine.stats();
    return {
      ok: true,
      detail: `java ${info.version}; ${s.workers} workers up, ${s.busy} busy, ${s.queued} queued`,
    };
  });
  app.addHook('onClose', async () => engine.close());
  if (cfg.prestart) app.addHook('onListen', async () => engine.warm());

  await plantumlRoutes(app, ctx, engine);
  await proxyRoute(app, ctx, engine);
  await editorRoutes(app, ctx);
};

export default plantuml;

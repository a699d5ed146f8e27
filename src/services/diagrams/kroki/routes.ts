// Kroki's HTTP API beside plantuml-server's, under the diagram utility's prefix (or at the root of
// its own host): GET /{type}/{format}/{encoded}, POST /{type}/{format} and POST /{type} (format
// from Accept) with the source as the body (or Kroki's JSON), POST / with
// {diagram_source, diagram_type, output_format, diagram_options}, and GET /health. A type is a
// static first segment, so these never shadow plantuml-server's /{format}/... routes.
// This is the route table; the handlers are in handlers.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import type { PlantumlEngine } from '../plantuml/engine.ts';
import { type KrokiDeps, type KrokiReq, renderEncoded, renderJson, renderPosted } from './handlers.ts';
import { health } from './health.ts';
import { LANGUAGES, languageOf } from './languages.ts';
import type { DiagramRenderer } from './renderer.ts';
import { krokiStatus, sendKrokiError } from './reply.ts';
import { httpOf } from './request.ts';

type Params = { fmt?: string; encoded?: string };

/** Every failure in Kroki's shape (the route family's own envelope), chosen by Accept. */
const guard =
  <R extends FastifyRequest>(fn: (req: R, reply: FastifyReply) => Promise<FastifyReply>) =>
  async (req: R, reply: FastifyReply) => {
    try {
      return await fn(req, reply);
    } catch (err) {
      const e = krokiStatus(httpOf(err));
      if (!e) throw err;
      return sendKrokiError(req, reply, e.status, e.message, e.headers);
    }
  };

const doc = (summary: string, type: string) => ({
  summary: `Kroki: ${summary}`,
  tags: ['diagrams'],
  description: `${type}: formats ${languageOf(type)?.formats.join(', ')}. See docs/diagrams.md.`,
});

export async function krokiRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  renderer: DiagramRenderer,
): Promise<void> {
  const cfg = ctx.config.diagrams;
  const onRequest = ctx.limiter.hook('diagrams', cfg.rateLimit);
  const d: KrokiDeps = {
    cfg,
    jsonMaxDepth: ctx.config.server.jsonMaxDepth,
    engine,
    renderer,
    memos: ctx.local(DIAGRAM_MEMOS),
    lane: ctx.lane,
  };

  for (const lang of LANGUAGES) {
    const base = `/plantuml/${lang.type}`;
    app.get<{ Params: Params }>(
      `${base}/:fmt/:encoded`,
      { onRequest, schema: doc(`render an encoded ${lang.type} diagram`, lang.type) },
      guard((req: KrokiReq, reply) => renderEncoded(d, lang, req, reply)),
    );
    const post = guard((req: KrokiReq, reply) => renderPosted(d, lang, req, reply));
    app.post<{ Params: Params }>(
      `${base}/:fmt`,
      { onRequest, schema: doc(`render the ${lang.type} source in the body`, lang.type) },
      post,
    );
    app.post<{ Params: Params }>(
      base,
      { onRequest, schema: doc(`render the ${lang.type} source in the body, format from Accept`, lang.type) },
      post,
    );
  }

  app.post(
    '/plantuml/',
    {
      onRequest,
      schema: {
        summary: 'Kroki: render {"diagram_source", "diagram_type", "output_format", "diagram_options"} JSON',
        tags: ['diagrams'],
      },
    },
    guard((req, reply) => renderJson(d, req, reply)),
  );

  const healthDoc = {
    summary: 'Kroki: every diagram language with its formats, available or not and why',
    tags: ['diagrams'],
  };
  for (const path of ['/plantuml/health', '/plantuml/v1/health'])
    app.get(path, { schema: healthDoc }, async (_req, reply) =>
      reply
        .type('application/health+json')
        .header('cache-control', 'no-cache')
        .send(JSON.stringify(await health(ctx, engine, renderer))),
    );
}

// Kroki's HTTP API beside plantuml-server's, under the diagram utility's prefix (or at the root of
// its own host): GET /{type}/{format}/{encoded}, POST /{type}/{format} and POST /{type} (format
// from Accept) with the source as the body (or Kroki's JSON), POST / with
// {diagram_source, diagram_type, output_format, diagram_options}, and GET /health.
// One route per shape, the type looked up by its handler (not one route per type and shape: 24
// types x 3 shapes cost start-up and every test server build 72 routes with their schemas). Three
// of plantuml-server's routes have the same shapes (/{fmt}/{index}/{encoded}, POST /{fmt}/{index},
// POST /{fmt}): a first segment that is not a Kroki type goes to them, as a type was a static
// segment that won over their parameter before. Static routes (/health, /coder, /uml...) still win.
// This is the route table; the handlers are in handlers.ts, loaded with the renderer on the first
// Kroki request (infra/http/lazy.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { type LazyImpl, lazyImpl } from '../../../infra/http/lazy.ts';
import { docOnly } from '../../../infra/http/openapi.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import type { PlantumlEngine } from '../plantuml/engine.ts';
import { ENCODED, type PlantumlServerRoutes, SERVER_FORMATS } from '../plantuml/routes.ts';
import type { KrokiDeps, KrokiReq } from './handlers.ts';
import { LANGUAGES, type Language } from './languages.ts';
import type { DiagramRenderer } from './renderer.ts';

type Params = { type: string; fmt?: string; encoded?: string };
type Req = FastifyRequest<{ Params: Params }>;

// Exactly the type as written: the router matched a type's static segment case-sensitively before.
const byType = new Map<string, Language>(LANGUAGES.map((l) => [l.type, l]));
const krokiType = (type: string) => byType.get(type);

/** Kroki's error answers (reply.ts, and the rasteriser it brings): loaded by the first failure. */
const replies = lazyImpl("Kroki's error answers", () => import('./reply.ts'));

/**
 * Every failure in Kroki's shape (the route family's own envelope), chosen by Accept. `httpOf` maps
 * a renderer failure onto its HTTP error (the loaded handlers' own; before they load, no failure
 * can be the renderer's).
 */
const guarded =
  (httpOf: (err: unknown) => unknown) =>
  <R extends FastifyRequest, A extends unknown[]>(
    fn: (req: R, reply: FastifyReply, ...a: A) => Promise<FastifyReply>,
  ) =>
  async (req: R, reply: FastifyReply, ...a: A) => {
    try {
      return await fn(req, reply, ...a);
    } catch (err) {
      const { krokiStatus, sendKrokiError } = replies.value ?? (await replies.get());
      const e = krokiStatus(httpOf(err));
      if (!e) throw err;
      return sendKrokiError(req, reply, e.status, e.message, e.headers);
    }
  };

const TYPES = LANGUAGES.map((l) => l.type);
const FORMATS_BY_TYPE = LANGUAGES.map((l) => `${l.type}: ${l.formats.join(' ')}`).join('; ');

/** The documentation of a shared shape: which types and formats exist, and the server's route. */
const doc = (summary: string, server: string, names: Record<string, string>) => ({
  schema: {
    summary: `Kroki: ${summary}`,
    tags: ['diagrams'],
    description: `Formats by type: ${FORMATS_BY_TYPE}. A first segment that is not a diagram type is plantuml-server's ${server} (fmt: ${SERVER_FORMATS}). See docs/diagrams.md.`,
  },
  config: docOnly({
    params: {
      type: 'object',
      required: Object.keys(names),
      properties: Object.fromEntries(
        Object.entries(names).map(([n, description]) => [
          n,
          n === 'type' ? { type: 'string', enum: TYPES, description } : { type: 'string', description },
        ]),
      ),
    },
  }),
});

export async function krokiRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  renderer: LazyImpl<DiagramRenderer>,
  server: PlantumlServerRoutes,
): Promise<void> {
  const cfg = ctx.config.diagrams;
  const onRequest = ctx.limiter.hook('diagrams', cfg.rateLimit);
  const kroki = lazyImpl('Kroki rendering', async () => {
    const [r, handlers, { health }, { httpOf }] = await Promise.all([
      renderer.get(),
      import('./handlers.ts'),
      import('./health.ts'),
      import('./request.ts'),
    ]);
    const d: KrokiDeps = {
      cfg,
      jsonMaxDepth: ctx.config.server.jsonMaxDepth,
      engine,
      renderer: r,
      memos: ctx.local(DIAGRAM_MEMOS),
      lane: ctx.lane,
    };
    return { ...handlers, health: () => health(ctx, engine, r), httpOf, d };
  });
  const guard = guarded((err) => kroki.value?.httpOf(err) ?? err);
  const load = () => kroki.value ?? kroki.get();

  // plantuml-server's routes answer their errors in their own envelope: only Kroki's are guarded.
  const krokiEncoded = guard(async (req: KrokiReq, reply, lang: Language) => {
    const k = await load();
    return k.renderEncoded(k.d, lang, req, reply);
  });
  const krokiPosted = guard(async (req: KrokiReq, reply, lang: Language) => {
    const k = await load();
    return k.renderPosted(k.d, lang, req, reply);
  });
  const encoded = (req: Req, reply: FastifyReply) => {
    const { type, fmt, encoded } = req.params;
    const lang = krokiType(type);
    return lang ? krokiEncoded(req, reply, lang) : server.encoded(req, reply, type, fmt, encoded ?? '');
  };
  const posted = (req: Req, reply: FastifyReply) => {
    const { type, fmt } = req.params;
    const lang = krokiType(type);
    return lang ? krokiPosted(req, reply, lang) : server.posted(req, reply, type, fmt);
  };
  const type = 'the diagram type';
  const fmt = "the output format (by type below); plantuml-server's route: the image number";
  app.get<{ Params: Params }>(
    '/plantuml/:type/:fmt/:encoded',
    {
      onRequest,
      ...doc('render an encoded diagram', '/{fmt}/{index}/{encoded}', {
        type,
        fmt,
        encoded: `the source, deflated in base64url (${ENCODED})`,
      }),
    },
    encoded,
  );
  app.post<{ Params: Params }>(
    '/plantuml/:type/:fmt',
    { onRequest, ...doc('render the source in the body', 'POST /{fmt}/{index}', { type, fmt }) },
    posted,
  );
  app.post<{ Params: Params }>(
    '/plantuml/:type',
    { onRequest, ...doc('render the source in the body, format from Accept', 'POST /{fmt}', { type }) },
    posted,
  );

  app.post(
    '/plantuml/',
    {
      onRequest,
      schema: {
        summary: 'Kroki: render {"diagram_source", "diagram_type", "output_format", "diagram_options"} JSON',
        tags: ['diagrams'],
      },
    },
    guard(async (req, reply) => {
      const k = await load();
      return k.renderJson(k.d, req, reply);
    }),
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
        .send(JSON.stringify(await (await load()).health())),
    );
}

// plantuml-server's URL API under /plantuml (the PlantUML host is rewritten onto it), beside
// Kroki's (kroki/routes.ts); the route table, whose handlers (handlers.ts) load on first use.
// Thin: decode -> engine -> diagram-reply. Kroki's routes have the same
// shapes as three of the server's (a first segment, then one or two more): one route serves both, so
// those three are registered by kroki/routes.ts, which hands a first segment that is not a Kroki
// type to the handlers returned here.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { type LazyImpl, lazyImpl } from '../../../infra/http/lazy.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import { encodeDiagram } from './encoding.ts';
import type { PlantumlEngine } from './engine.ts';
import type * as Handlers from './handlers.ts';

type Params = { fmt: string; index?: string; encoded?: string };

/** handlers.ts once loaded, with the shared routes' handlers made for this server. */
export type PlantumlHandlers = LazyImpl<typeof Handlers & { server: PlantumlServerRoutes }>;

/** plantuml-server's handlers for the routes Kroki's share: the path segments are passed in. */
export interface PlantumlServerRoutes {
  /** GET /{fmt}/{index}/{encoded} (and /{fmt}/{encoded} with index undefined). */
  encoded(
    req: FastifyRequest,
    reply: FastifyReply,
    fmt: string,
    index: string | undefined,
    encoded: string,
  ): Promise<FastifyReply>;
  /** POST /{fmt} and POST /{fmt}/{index}: the diagram text as the body. */
  posted(
    req: FastifyRequest,
    reply: FastifyReply,
    fmt: string,
    index: string | undefined,
  ): Promise<FastifyReply>;
}

/** The server's format words, for the route documentation (/docs). */
export const SERVER_FORMATS = 'png img svg txt utxt eps epstext pdf base64 map check, dark: dpng dsvg dtxt';
/** What an encoded path segment may be, for the route documentation. */
export const ENCODED = 'PlantUML DEFLATE, ~h hex or Kroki base64url';

export async function plantumlRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  laneHit?: (status: number) => void,
): Promise<{ server: PlantumlServerRoutes; handlers: PlantumlHandlers }> {
  const cfg = ctx.config.diagrams;
  const onRequest = ctx.limiter.hook('diagrams', cfg.rateLimit);
  const memos = ctx.local(DIAGRAM_MEMOS);
  const opts = { cacheHeaders: cfg.cacheHeaders, prepared: memos.plantuml, lane: ctx.lane, laneHit };

  // Bodies are diagram text whatever their Content-Type; Kroki's JSON is parsed by its route.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: cfg.maxSourceBytes + 64 * 1024 },
    (_r, b, done) => done(null, b),
  );

  // The handlers (and the decoder, the formats and the diagram answer they use) load with the first
  // request of a PlantUML route; the editor's and /proxy's routes share the one load.
  const handlers = lazyImpl('the PlantUML handlers', async () => {
    const h = await import('./handlers.ts');
    return { ...h, server: h.serverRoutes(ctx, engine, memos, opts) };
  });
  const loaded = async () => handlers.value ?? (await handlers.get());
  const server: PlantumlServerRoutes = {
    encoded: async (req, reply, fmt, index, encoded) =>
      (await loaded()).server.encoded(req, reply, fmt, index, encoded),
    posted: async (req, reply, fmt, index) => (await loaded()).server.posted(req, reply, fmt, index),
  };

  // Documented in /docs (no params schema: unknown formats get the server's 404, not a validation 400).
  app.get<{ Params: Params }>(
    '/plantuml/:fmt/:encoded',
    {
      onRequest,
      schema: {
        summary: 'Render an encoded diagram',
        tags: ['diagrams'],
        description: `fmt: ${SERVER_FORMATS}; encoded: ${ENCODED}. 400 + error image and X-PlantUML-Diagram-Error on a syntax error. See docs/diagrams.md.`,
      },
    },
    (req, reply) => server.encoded(req, reply, req.params.fmt, undefined, req.params.encoded ?? ''),
  );
  const brief = (summary: string) => ({ summary, tags: ['diagrams'] });

  // /coder: text <-> encoded, no cache headers.
  const decodeDoc = brief('Decode an encoded diagram back to its text');
  app.get<{ Params: { encoded: string } }>(
    '/plantuml/coder/:encoded',
    { schema: decodeDoc },
    async (req, reply) => {
      reply.header('access-control-allow-origin', '*').type('text/plain;charset=UTF-8');
      const { decodeOrThrow } = await loaded();
      return decodeOrThrow(memos.decoded, req.params.encoded, cfg.maxSourceBytes);
    },
  );
  app.post(
    '/plantuml/coder',
    { schema: brief('Encode the diagram text in the body') },
    async (req, reply) => {
      reply.header('access-control-allow-origin', '*').type('text/plain;charset=UTF-8');
      const { bodyText } = await loaded();
      return encodeDiagram(bodyText(req.body, cfg.maxSourceBytes));
    },
  );

  const languageDoc = brief("The engine's keywords, types and skin parameters (for editors)");
  app.get('/plantuml/language', { onRequest, schema: languageDoc }, async (_req, reply) => {
    const { httpError } = await loaded();
    let text: string;
    try {
      text = await engine.language();
    } catch (err) {
      throw httpError(err);
    }
    // [quirk] the server's content type for /language.
    return reply.header('access-control-allow-origin', '*').type('text/text').send(text);
  });
  return { server, handlers };
}

// plantuml-server's URL API under /plantuml (the PlantUML host is rewritten onto it), beside
// Kroki's (kroki/routes.ts). Thin: decode -> engine -> diagram-reply. Kroki's routes have the same
// shapes as three of the server's (a first segment, then one or two more): one route serves both, so
// those three are registered by kroki/routes.ts, which hands a first segment that is not a Kroki
// type to the handlers returned here.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { badRequest } from '../../../infra/http/errors.ts';
import { typeList } from '../kroki/languages.ts';
import { sendKrokiError } from '../kroki/reply.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import { decodeOrThrow } from './decode.ts';
import { httpError, sendDiagram } from './diagram-reply.ts';
import { encodeDiagram, normalizeSource } from './encoding.ts';
import type { PlantumlEngine } from './engine.ts';
import { formatOf } from './formats.ts';

type Params = { fmt: string; index?: string; encoded?: string };

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

const MAX_INDEX = 10_000;

/** The server's format words, for the route documentation (/docs). */
export const SERVER_FORMATS = 'png img svg txt utxt eps epstext pdf base64 map check, dark: dpng dsvg dtxt';
/** What an encoded path segment may be, for the route documentation. */
export const ENCODED = 'PlantUML DEFLATE, ~h hex or Kroki base64url';

function bodyText(body: unknown, maxBytes: number): string {
  if (!Buffer.isBuffer(body) || body.length === 0)
    throw badRequest('send the diagram text as the request body');
  if (body.length > maxBytes) throw badRequest('diagram source is too large', 'TOO_LARGE');
  // UTF-8 whatever the charset says: the reference's Latin-1 default is not kept
  // (docs/protocols/plantuml-server.md §1).
  return body.toString('utf8');
}

/** The image index (0 when the route has none), or null when the segment is not an image number. */
function parseIndex(s: string | undefined): number | null {
  if (s === undefined) return 0;
  if (!/^\d{1,5}$/.test(s) || Number(s) > MAX_INDEX) return null;
  return Number(s);
}

export async function plantumlRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  laneHit?: (status: number) => void,
): Promise<PlantumlServerRoutes> {
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

  // The source is read once the route is known to name a format: a wrong path is told before the body.
  async function diagram(
    req: FastifyRequest,
    reply: FastifyReply,
    word: string,
    index: string | undefined,
    read: () => string,
  ) {
    const mapper = req.headers['x-preferred-color-mapper'];
    const fmt = formatOf(word, typeof mapper === 'string' ? mapper : undefined);
    // An unknown first segment is most often a mistyped Kroki diagram type (POST /plantuml/nosuch/svg):
    // answered in Kroki's error shape, so a client asking for JSON gets JSON as for Kroki's other errors.
    if (!fmt)
      return sendKrokiError(
        req,
        reply,
        404,
        `unknown format or diagram type ${word.slice(0, 40)}; formats: png svg txt eps epstext pdf base64 map check; diagram types: ${typeList()}`,
      );
    const idx = parseIndex(index);
    if (idx === null)
      return sendKrokiError(
        req,
        reply,
        404,
        `no such diagram route: ${String(index).slice(0, 40)} is not an image number after ${word.slice(0, 40)}; diagram types: ${typeList()}`,
      );
    const source = read();
    reply.header('access-control-allow-origin', '*');
    if (fmt.op === 'check') {
      let line: string;
      try {
        line = await engine.check(source, req.clientKey);
      } catch (err) {
        throw httpError(err);
      }
      return reply.type(fmt.contentType).send(line);
    }
    return sendDiagram(req, reply, engine, fmt, idx, source, opts);
  }

  const server: PlantumlServerRoutes = {
    encoded: (req, reply, fmt, index, encoded) =>
      diagram(req, reply, fmt, index, () => decodeOrThrow(memos.decoded, encoded, cfg.maxSourceBytes)),
    posted: (req, reply, fmt, index) =>
      diagram(req, reply, fmt, index, () => normalizeSource(bodyText(req.body, cfg.maxSourceBytes))),
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
      return decodeOrThrow(memos.decoded, req.params.encoded, cfg.maxSourceBytes);
    },
  );
  app.post(
    '/plantuml/coder',
    { schema: brief('Encode the diagram text in the body') },
    async (req, reply) => {
      reply.header('access-control-allow-origin', '*').type('text/plain;charset=UTF-8');
      return encodeDiagram(bodyText(req.body, cfg.maxSourceBytes));
    },
  );

  const languageDoc = brief("The engine's keywords, types and skin parameters (for editors)");
  app.get('/plantuml/language', { onRequest, schema: languageDoc }, async (_req, reply) => {
    let text: string;
    try {
      text = await engine.language();
    } catch (err) {
      throw httpError(err);
    }
    // [quirk] the server's content type for /language.
    return reply.header('access-control-allow-origin', '*').type('text/text').send(text);
  });
  return server;
}

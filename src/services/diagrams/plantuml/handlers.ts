// plantuml-server's handlers (routes.ts keeps the route table): loaded with the first request of a
// PlantUML route, not at start. Re-exports what the editor and /proxy routes use, so that one
// import brings all of it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { badRequest } from '../../../infra/http/errors.ts';
import { typeList } from '../kroki/languages.ts';
import { sendKrokiError } from '../kroki/reply.ts';
import type { DiagramMemos } from '../memos.ts';
import { decodeOrThrow } from './decode.ts';
import { httpError, type ReplyOptions, sendDiagram } from './diagram-reply.ts';
import { normalizeSource } from './encoding.ts';
import type { PlantumlEngine } from './engine.ts';
import { formatOf } from './formats.ts';
import type { PlantumlServerRoutes } from './routes.ts';

export { decodeOrThrow, formatOf, httpError, sendDiagram };

const MAX_INDEX = 10_000;

export function bodyText(body: unknown, maxBytes: number): string {
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

/** The handlers of the routes Kroki's share (kroki/routes.ts hands them a first segment that is not a Kroki type). */
export function serverRoutes(
  ctx: ServiceContext,
  engine: PlantumlEngine,
  memos: DiagramMemos,
  opts: ReplyOptions,
): PlantumlServerRoutes {
  const cfg = ctx.config.diagrams;
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

  return {
    encoded: (req, reply, fmt, index, encoded) =>
      diagram(req, reply, fmt, index, () => decodeOrThrow(memos.decoded, encoded, cfg.maxSourceBytes)),
    posted: (req, reply, fmt, index) =>
      diagram(req, reply, fmt, index, () => normalizeSource(bodyText(req.body, cfg.maxSourceBytes))),
  };
}

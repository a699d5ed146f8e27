// Turns a render outcome into the plantuml-server response: status, content type, cache and ETag headers,
// the X-PlantUML-Diagram-* headers, 304 on a matching conditional GET (docs/protocols/plantuml-server.md
// §5; decided by RFC 9110 through infra/http/conditional.ts, not plantuml-server's substring test).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { evaluate, type Precondition } from '../../../infra/http/conditional.ts';
import { AppError, badRequest, gatewayTimeout, unavailable } from '../../../infra/http/errors.ts';
import type { FastLane } from '../../../infra/http/fast-lane.ts';
import type { PreparedMemo } from '../../../infra/http/prepared-response.ts';
import { QueueFull } from '../../../infra/limits/fair-queue.ts';
import { sendKrokiError } from '../kroki/reply.ts';
import {
  BadDiagram,
  EngineBroken,
  EngineUnavailable,
  NotSupported,
  type PlantumlEngine,
  RenderFailed,
} from './engine.ts';
import type { FormatSpec } from './formats.ts';
import { PoolClosed, RenderTimeout, WorkerCrashed } from './pool.ts';

const MAX_AGE = 432_000; // 5 days, as the server

export interface ReplyOptions {
  cacheHeaders: boolean;
  /** This server's prepared answers of cached diagrams (memos.ts, infra/http/prepared-response.ts). */
  prepared: PreparedMemo;
  /** Kroki clients get Kroki-style plain errors; PlantUML clients get the error image. */
  kroki?: boolean;
  /** Repeats cached GET diagrams before the router (infra/http/fast-lane.ts). */
  lane?: FastLane;
  /** Told of each lane repeat (its status): the diagram counters the onResponse hook keeps. */
  laneHit?: ((status: number) => void) | undefined;
}

/** Maps engine and pool failures onto the HTTP errors the text envelope renders. */
export function httpError(err: unknown): unknown {
  if (err instanceof EngineUnavailable) return unavailable(err.message, 60, 'JAVA_REQUIRED');
  if (err instanceof QueueFull) return unavailable('too many diagrams in the render queue', 1, 'QUEUE_FULL');
  if (err instanceof PoolClosed) return unavailable(err.message, 1, 'SHUTTING_DOWN');
  if (err instanceof WorkerCrashed) return unavailable(err.message, 1, 'WORKER_CRASHED');
  if (err instanceof RenderTimeout)
    return gatewayTimeout(`diagram render timed out: ${err.message}`, 'RENDER_TIMEOUT');
  if (err instanceof BadDiagram) return badRequest(err.message, 'BAD_DIAGRAM');
  if (err instanceof NotSupported) return new AppError('NOT_IMPLEMENTED', 501, err.message);
  // plantuml-server answers 500 here; the request is well formed but this engine cannot render the
  // diagram in this format (e.g. txt of a class diagram without Graphviz): 422, not a server fault.
  if (err instanceof EngineBroken) return new AppError('ENGINE_BROKEN', 422, err.message);
  if (err instanceof RenderFailed) return new AppError('RENDER_FAILED', 422, err.message);
  return err;
}

/**
 * Header-safe text: engine messages can quote the user's source (any Unicode, control chars),
 * which Node refuses in a header. Non-ASCII becomes '?', and the length is bounded.
 */
export function headerText(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
}

function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function cacheHeaders(
  reply: FastifyReply,
  engine: PlantumlEngine,
  etag: string | null,
  ok: boolean,
  o: ReplyOptions,
) {
  if (!o.cacheHeaders) {
    reply.header('cache-control', 'no-cache');
    return;
  }
  const now = Date.now();
  // A 400 error image revalidates instead of living 5 days in caches (docs/protocols/plantuml-server.md §10).
  reply.header('cache-control', ok ? `public, max-age=${MAX_AGE}` : 'no-cache');
  if (ok) reply.header('expires', httpDate(now + MAX_AGE * 1000));
  const lm = lastModifiedMs(engine);
  if (lm !== null) reply.header('last-modified', httpDate(lm));
  if (etag) reply.header('etag', etag);
}

/** Last-Modified of every diagram: the engine's build time, to the minute (as plantuml-server). */
function lastModifiedMs(engine: PlantumlEngine): number | null {
  return engine.facts ? Math.floor(engine.facts.compileTime / 60_000) * 60_000 : null;
}

/**
 * The preconditions of a diagram answer. Its Last-Modified is the engine's build time, which says
 * nothing of the URLs a diagram reads: for those only the ETag (which hashes their content) counts.
 */
function precondition(
  req: FastifyRequest,
  engine: PlantumlEngine,
  etag: string | null,
  readsUrls: boolean,
  o: ReplyOptions,
): Precondition {
  // Without cache headers the answer has no validators: nothing to be conditional on.
  if (!o.cacheHeaders) return 'pass';
  return evaluate(req.method, req.headers, { etag, lastModified: readsUrls ? null : lastModifiedMs(engine) });
}

/** Renders `source` in `fmt` and sends it the way plantuml-server does. */
export async function sendDiagram(
  req: FastifyRequest,
  reply: FastifyReply,
  engine: PlantumlEngine,
  fmt: FormatSpec,
  index: number,
  source: string,
  o: ReplyOptions,
): Promise<FastifyReply> {
  reply.header('access-control-allow-origin', '*');
  const job = {
    op: fmt.op === 'map' ? 'map' : 'render',
    format: fmt.engine,
    index,
    dark: fmt.dark,
    source,
  } as const;
  if (o.cacheHeaders && (req.method === 'GET' || req.method === 'HEAD') && req.headers['if-none-match']) {
    // Decided before rendering: the ETag hashes the source and the content of the URLs it read
    // (revalidated here, a conditional GET at most). If-Modified-Since waits for the render,
    // which says whether the diagram reads URLs.
    const etag = await engine.currentEtag(job).catch(() => null);
    if (etag && evaluate(req.method, req.headers, { etag, lastModified: null }) === 'not-modified') {
      cacheHeaders(reply, engine, etag, true, o);
      return reply.code(304).send();
    }
  }
  let r: Awaited<ReturnType<PlantumlEngine['render']>>;
  try {
    r = await engine.render(job, req.clientKey);
  } catch (err) {
    throw httpError(err);
  }
  const ok = r.status === 'ok';
  if (r.cached && ok && !fmt.base64 && engine.facts) {
    // A cache hit: its headers (ETag hashing included) were worked out on its first hit.
    const facts = engine.facts;
    if (o.cacheHeaders) reply.header('expires', httpDate(Date.now() + MAX_AGE * 1000));
    const answer = o.prepared.get(r.body, `${fmt.contentType}\n${o.cacheHeaders}\n${facts.version}`, () => {
      const tag = engine.etag(source, r.includes);
      return {
        modifiedSince: !r.includes?.length,
        headers: {
          'access-control-allow-origin': '*',
          'cache-control': o.cacheHeaders ? `public, max-age=${MAX_AGE}` : 'no-cache',
          ...(o.cacheHeaders
            ? {
                'last-modified': httpDate(lastModifiedMs(engine)!),
                ...(tag ? { etag: tag } : {}),
              }
            : {}),
          'x-plantuml-diagram-description': headerText(r.description),
          'x-powered-by': `PlantUML Version ${facts.version}`,
          'x-plantuml-cache': 'hit',
          'content-type': fmt.contentType,
        },
      };
    });
    // Repeats of this URL come from the fast lane while the memory tier holds this body (each a
    // cache hit); not a diagram that read URLs, whose freshness is asked on every answer.
    if (o.lane && !r.includes?.length)
      o.lane.remember(req, answer, {
        valid: engine.holds(job, r.body),
        vary: ['x-preferred-color-mapper'],
        ...(o.laneHit ? { onHit: o.laneHit } : {}),
      });
    return answer.send(reply, req);
  }
  const tag = engine.etag(source, r.includes);
  cacheHeaders(reply, engine, tag, ok, o);
  // Preconditions apply to the diagram, not to an error (RFC 9110 13.2.1).
  const pre = ok ? precondition(req, engine, tag, Boolean(r.includes?.length), o) : 'pass';
  if (pre === 'not-modified') return reply.code(304).send();
  if (pre === 'failed') return reply.code(412).send();
  reply.header('x-plantuml-diagram-description', headerText(r.description));
  if (!ok && !o.kroki) {
    // One header per error, repeated when there are several (docs/protocols/plantuml-server.md §5).
    const one = (v: string[]) => (v.length === 1 ? v[0]! : v);
    if (r.errors.length) {
      reply.header('x-plantuml-diagram-error', one(r.errors.map((e) => headerText(e.message))));
      reply.header('x-plantuml-diagram-error-line', one(r.errors.map((e) => String(e.line))));
    }
  }
  if (engine.facts) reply.header('x-powered-by', `PlantUML Version ${engine.facts.version}`);
  reply.header('x-plantuml-cache', r.cached ? 'hit' : 'miss');
  reply.code(ok ? 200 : 400);
  if (!ok && o.kroki) {
    // Kroki's message, "<cause> (line: N)" with a 1-based line, in its error shape (by Accept).
    const first = r.errors[0];
    const msg = `${first?.message ?? 'Syntax Error?'} (line: ${(first?.line ?? 0) + 1})`;
    return sendKrokiError(req, reply, 400, msg, { 'cache-control': 'no-cache' });
  }
  reply.type(fmt.contentType);
  if (fmt.base64) return reply.send(`data:image/png;base64,${r.body.toString('base64')}`);
  return reply.send(r.body);
}

// Kroki's HTTP API beside plantuml-server's, under the diagram utility's prefix (or at the root of
// its own host): GET /{type}/{format}/{encoded}, POST /{type}/{format} and POST /{type} (format
// from Accept) with the source as the body (or Kroki's JSON), POST / with
// {diagram_source, diagram_type, output_format, diagram_options}, and GET /health. A type is a
// static first segment, so these never shadow plantuml-server's /{format}/... routes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { evaluate } from '../../../infra/http/conditional.ts';
import { AppError, badRequest, gatewayTimeout, tooLarge, unavailable } from '../../../infra/http/errors.ts';
import { checkJsonDepth } from '../../../infra/http/json-body.ts';
import { QueueFull } from '../../../infra/limits/fair-queue.ts';
import { RenderCrashed, RenderPoolClosed, RenderTimeout } from '../engines/render-job.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import { sendDiagram } from '../plantuml/diagram-reply.ts';
import { normalizeSource } from '../plantuml/encoding.ts';
import type { PlantumlEngine } from '../plantuml/engine.ts';
import { formatOf } from '../plantuml/formats.ts';
import { decodeOrThrow } from '../plantuml/routes.ts';
import { health } from './health.ts';
import { LANGUAGES, type Language, languageOf, typeList } from './languages.ts';
import {
  type DiagramJob,
  type DiagramRenderer,
  EngineFailed,
  EngineMissing,
  TooLarge,
  Unsupported,
} from './renderer.ts';
import { CONTENT_TYPES, formatFromAccept, krokiStatus, MAX_AGE, sendKrokiError } from './reply.ts';

type Params = { fmt?: string; encoded?: string };
const MAX_OPTIONS = 16;

/** Maps a renderer failure onto the HTTP error it is. */
function httpOf(err: unknown): unknown {
  if (err instanceof EngineMissing) return unavailable(err.message, 60, 'ENGINE_MISSING');
  if (err instanceof QueueFull) return unavailable('too many diagrams in the render queue', 1, 'QUEUE_FULL');
  if (err instanceof RenderPoolClosed) return unavailable(err.message, 1, 'SHUTTING_DOWN');
  if (err instanceof RenderTimeout)
    return gatewayTimeout(`diagram render timed out: ${err.message}`, 'RENDER_TIMEOUT');
  if (err instanceof RenderCrashed) return new AppError('RENDER_CRASHED', 422, err.message);
  if (err instanceof TooLarge) return tooLarge(err.message, 'TOO_LARGE');
  if (err instanceof EngineFailed) return new AppError('RENDER_FAILED', 422, err.message);
  if (err instanceof Unsupported) return new AppError('UNSUPPORTED_DIAGRAM', 422, err.message);
  return err;
}

/** Kroki's options: query parameters, Kroki-Diagram-Options-* headers, then diagram_options; only those the engine reads. */
function optionsOf(req: FastifyRequest, lang: Language, json?: unknown): Record<string, string> {
  const allowed = new Set(lang.options ?? []);
  const out: Record<string, string> = {};
  if (allowed.size === 0) return { ...lang.preset };
  const put = (k: string, v: unknown) => {
    const key = k.toLowerCase();
    if (!allowed.has(key) || Object.keys(out).length >= MAX_OPTIONS) return;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
      out[key] = String(v).slice(0, 200);
  };
  for (const [k, v] of Object.entries((req.query as Record<string, unknown>) ?? {})) put(k, v);
  for (const [k, v] of Object.entries(req.headers))
    if (k.startsWith('kroki-diagram-options-')) put(k.slice('kroki-diagram-options-'.length), v);
  if (json && typeof json === 'object') for (const [k, v] of Object.entries(json)) put(k, v);
  return Object.fromEntries(
    Object.entries({ ...out, ...lang.preset }).sort(([a], [b]) => a.localeCompare(b)),
  );
}

function hasOptionHeaders(h: Record<string, unknown>): boolean {
  for (const k in h) if (k.startsWith('kroki-diagram-options-')) return true;
  return false;
}

function bodyText(body: unknown, maxBytes: number): string {
  if (!Buffer.isBuffer(body) || body.length === 0) throw badRequest('Request body must not be empty.');
  if (body.length > maxBytes) throw tooLarge('diagram source is too large', 'TOO_LARGE');
  return body.toString('utf8');
}

function parseJson(text: string, depth: number): Record<string, unknown> {
  checkJsonDepth(text, depth);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw badRequest('expected JSON {"diagram_source", "diagram_type", "output_format", "diagram_options"}');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw badRequest('expected a JSON object');
  return v as Record<string, unknown>;
}

function unsupportedFormat(word: string, lang: Language) {
  return badRequest(
    `Unsupported output format: ${word.slice(0, 40)} for ${lang.type}. Must be one of ${lang.formats.join(', ')}.`,
    'UNSUPPORTED_FORMAT',
  );
}

/** The source a PlantUML-family language hands the JVM: ditaa in its own block, Kroki's theme option. */
function plantumlSource(lang: Language, text: string, options: Record<string, string>): string {
  let src = text.replace(/\r\n?/g, '\n');
  if (lang.engine === 'ditaa' && !src.trimStart().startsWith('@start'))
    src = `@startditaa\n${src}\n@endditaa`;
  src = normalizeSource(src);
  const theme = options['theme'];
  if (theme && /^[\w-]{1,64}$/.test(theme))
    src = src.replace(/^(\s*@start\w*[^\n]*\n)/, `$1!theme ${theme}\n`);
  return src;
}

export async function krokiRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  engine: PlantumlEngine,
  renderer: DiagramRenderer,
): Promise<void> {
  const cfg = ctx.config.diagrams;
  const onRequest = ctx.limiter.hook('diagrams', cfg.rateLimit);
  const memos = ctx.local(DIAGRAM_MEMOS);

  async function render(
    req: FastifyRequest,
    reply: FastifyReply,
    lang: Language,
    word: string,
    text: string,
    options: Record<string, string>,
  ): Promise<FastifyReply> {
    const format = word.toLowerCase();
    if (!lang.formats.includes(format)) throw unsupportedFormat(word, lang);
    if (Buffer.byteLength(text) > cfg.maxSourceBytes)
      throw tooLarge('diagram source is too large', 'TOO_LARGE');
    if (!text.trim()) throw badRequest('Request body must not be empty.');
    reply.header('access-control-allow-origin', '*');
    if (lang.kind === 'plantuml') {
      const fmt = formatOf(format === 'utxt' ? 'utxt' : format, undefined, true);
      if (fmt?.op !== 'render') throw unsupportedFormat(word, lang);
      return sendDiagram(req, reply, engine, fmt, 0, plantumlSource(lang, text, options), {
        cacheHeaders: cfg.cacheHeaders,
        prepared: memos.plantuml,
        kroki: true,
      });
    }
    const job: DiagramJob = { lang, format, source: text, options };
    await renderer.detect(lang);
    const etag = cfg.cacheHeaders ? renderer.etag(job) : null;
    // Decided before rendering (the ETag hashes the job), by RFC 9110 (infra/http/conditional.ts).
    const pre = etag ? evaluate(req.method, req.headers, { etag, lastModified: null }) : 'pass';
    if (pre === 'not-modified')
      return reply
        .code(304)
        .headers({ etag: etag!, 'cache-control': `public, max-age=${MAX_AGE}` })
        .send();
    if (pre === 'failed') return sendKrokiError(req, reply, 412, 'the diagram does not match If-Match');
    let out: Awaited<ReturnType<DiagramRenderer['render']>>;
    try {
      out = await renderer.render(job, req.clientKey);
    } catch (err) {
      throw httpOf(err);
    }
    if (!out.ok) {
      const line = out.line !== undefined && !/line/i.test(out.message ?? '') ? ` (line: ${out.line})` : '';
      return sendKrokiError(req, reply, 400, `${out.message ?? 'Syntax error'}${line}`);
    }
    const contentType = CONTENT_TYPES[format] ?? 'application/octet-stream';
    const headers = {
      'access-control-allow-origin': '*',
      'cache-control': cfg.cacheHeaders ? `public, max-age=${MAX_AGE}` : 'no-cache',
      ...(etag ? { etag } : {}),
      'x-plantuml-cache': out.cached ? 'hit' : 'miss',
      'content-type': contentType,
    };
    if (cfg.cacheHeaders) reply.header('expires', new Date(Date.now() + MAX_AGE * 1000).toUTCString());
    if (out.cached) {
      const answer = memos.kroki.get(out.body, `${contentType}\n${etag}`, () => ({ headers }));
      // Repeats of this URL (a GET's source is in its URL) come from the fast lane while the memory
      // tier holds this body; each repeat is a cache hit.
      // Options can also come in Kroki-Diagram-Options-* headers: only answers asked without any.
      if (!hasOptionHeaders(req.headers))
        ctx.lane.remember(req, answer, {
          valid: renderer.holds(job, out.body),
          accepts: (h) => !hasOptionHeaders(h),
        });
      return answer.sendBody(reply);
    }
    return reply.code(200).headers(headers).send(out.body);
  }

  // Every failure in Kroki's shape (the route family's own envelope), chosen by Accept.
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
  for (const lang of LANGUAGES) {
    const base = `/plantuml/${lang.type}`;
    app.get<{ Params: Params }>(
      `${base}/:fmt/:encoded`,
      { onRequest, schema: doc(`render an encoded ${lang.type} diagram`, lang.type) },
      guard(async (req, reply) => {
        const text = decodeOrThrow(
          memos.decoded,
          req.params.encoded ?? '',
          cfg.maxSourceBytes,
          lang.kind === 'plantuml' ? 'raw' : 'kroki',
        );
        return render(req, reply, lang, req.params.fmt ?? '', text, optionsOf(req, lang));
      }),
    );
    const post = guard(async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
      const raw = bodyText(req.body, cfg.maxSourceBytes + 64 * 1024);
      const isJson = /^application\/json\b/i.test(String(req.headers['content-type'] ?? ''));
      let text = raw;
      let word = req.params.fmt;
      let json: Record<string, unknown> | undefined;
      if (isJson) {
        json = parseJson(raw, ctx.config.server.jsonMaxDepth);
        if (typeof json['diagram_source'] !== 'string' || !json['diagram_source'].trim())
          throw badRequest('Field diagram_source must not be empty.');
        text = json['diagram_source'];
        if (!word && typeof json['output_format'] === 'string') word = json['output_format'];
      }
      if (!word) {
        const f = formatFromAccept(req.headers.accept, lang.formats);
        if (!f)
          throw badRequest(
            req.headers.accept
              ? `Content negotiation failed, no output format found for the following MIME types: ${req.headers.accept.slice(0, 200)}. Must be one of ${lang.formats.map((x) => CONTENT_TYPES[x]?.split(';')[0]).join(', ')} for ${lang.type}.`
              : 'Output format is undefined. Must be defined as part of the query path or as an Accept header.',
            'UNDEFINED_FORMAT',
          );
        word = f;
      }
      return render(req, reply, lang, word, text, optionsOf(req, lang, json?.['diagram_options']));
    });
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
    guard(async (req, reply) => {
      const json = parseJson(
        bodyText(req.body, cfg.maxSourceBytes + 64 * 1024),
        ctx.config.server.jsonMaxDepth,
      );
      const source = json['diagram_source'];
      if (typeof source !== 'string' || !source.trim())
        throw badRequest('Field diagram_source must not be empty.');
      // plantuml-server clients that post Kroki JSON without a type meant PlantUML (kept from before).
      const type = json['diagram_type'] === undefined ? 'plantuml' : json['diagram_type'];
      const lang = typeof type === 'string' ? languageOf(type) : undefined;
      if (!lang)
        throw badRequest(
          `Unsupported diagram type: ${String(type).slice(0, 40)}. Must be one of ${typeList()}`,
          'UNSUPPORTED_TYPE',
        );
      const fmt = typeof json['output_format'] === 'string' ? json['output_format'] : 'svg';
      return render(req, reply, lang, fmt, source, optionsOf(req, lang, json['diagram_options']));
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
        .send(JSON.stringify(await health(ctx, engine, renderer))),
    );
}

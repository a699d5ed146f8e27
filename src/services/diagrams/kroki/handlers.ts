// Kroki's handlers: a diagram from an encoded URL, from a posted body (the source or Kroki's JSON)
// and from POST / JSON naming its type; all render through render(). Each takes the KrokiDeps
// krokiRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../../config.ts';
import { evaluate } from '../../../infra/http/conditional.ts';
import { badRequest, tooLarge } from '../../../infra/http/errors.ts';
import type { FastLane } from '../../../infra/http/fast-lane.ts';
import type { DiagramMemos } from '../memos.ts';
import { decodeOrThrow } from '../plantuml/decode.ts';
import { sendDiagram } from '../plantuml/diagram-reply.ts';
import type { PlantumlEngine } from '../plantuml/engine.ts';
import { formatOf } from '../plantuml/formats.ts';
import { type Language, languageOf, typeList } from './languages.ts';
import type { DiagramJob, DiagramRenderer } from './renderer.ts';
import { CONTENT_TYPES, formatFromAccept, MAX_AGE, sendKrokiError } from './reply.ts';
import {
  bodyText,
  hasOptionHeaders,
  httpOf,
  optionsOf,
  parseJson,
  plantumlSource,
  unsupportedFormat,
} from './request.ts';

export interface KrokiDeps {
  cfg: Config['diagrams'];
  /** The server's JSON nesting cap (server.jsonMaxDepth). */
  jsonMaxDepth: number;
  engine: PlantumlEngine;
  renderer: DiagramRenderer;
  memos: DiagramMemos;
  lane: FastLane;
}

export type KrokiReq = FastifyRequest<{ Params: { fmt?: string; encoded?: string } }>;

/** Renders `text` of `lang` as `word` (a format name), with Kroki's caching headers. */
export async function render(
  d: KrokiDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  lang: Language,
  word: string,
  text: string,
  options: Record<string, string>,
): Promise<FastifyReply> {
  const { cfg, renderer, memos } = d;
  const format = word.toLowerCase();
  if (!lang.formats.includes(format)) throw unsupportedFormat(word, lang);
  if (Buffer.byteLength(text) > cfg.maxSourceBytes)
    throw tooLarge('diagram source is too large', 'TOO_LARGE');
  if (!text.trim()) throw badRequest('Request body must not be empty.');
  reply.header('access-control-allow-origin', '*');
  if (lang.kind === 'plantuml') {
    const fmt = formatOf(format === 'utxt' ? 'utxt' : format, undefined, true);
    if (fmt?.op !== 'render') throw unsupportedFormat(word, lang);
    return sendDiagram(req, reply, d.engine, fmt, 0, plantumlSource(lang, text, options), {
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
      d.lane.remember(req, answer, {
        valid: renderer.holds(job, out.body),
        accepts: (h) => !hasOptionHeaders(h),
      });
    return answer.sendBody(reply);
  }
  return reply.code(200).headers(headers).send(out.body);
}

/** GET /{type}/{format}/{encoded}: the source in the URL. */
export async function renderEncoded(d: KrokiDeps, lang: Language, req: KrokiReq, reply: FastifyReply) {
  const text = decodeOrThrow(
    d.memos.decoded,
    req.params.encoded ?? '',
    d.cfg.maxSourceBytes,
    lang.kind === 'plantuml' ? 'raw' : 'kroki',
  );
  return render(d, req, reply, lang, req.params.fmt ?? '', text, optionsOf(req, lang));
}

/** POST /{type}/{format} and POST /{type} (format from Accept): the source, or Kroki's JSON, as the body. */
export async function renderPosted(d: KrokiDeps, lang: Language, req: KrokiReq, reply: FastifyReply) {
  const raw = bodyText(req.body, d.cfg.maxSourceBytes + 64 * 1024);
  const isJson = /^application\/json\b/i.test(String(req.headers['content-type'] ?? ''));
  let text = raw;
  let word = req.params.fmt;
  let json: Record<string, unknown> | undefined;
  if (isJson) {
    json = parseJson(raw, d.jsonMaxDepth);
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
  return render(d, req, reply, lang, word, text, optionsOf(req, lang, json?.['diagram_options']));
}

/** POST / with {diagram_source, diagram_type, output_format, diagram_options}. */
export async function renderJson(d: KrokiDeps, req: FastifyRequest, reply: FastifyReply) {
  const json = parseJson(bodyText(req.body, d.cfg.maxSourceBytes + 64 * 1024), d.jsonMaxDepth);
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
  return render(d, req, reply, lang, fmt, source, optionsOf(req, lang, json['diagram_options']));
}

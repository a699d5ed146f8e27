// Reading a Kroki request: its source from a body or Kroki's JSON, the options an engine reads,
// and what each renderer failure answers as.
import type { FastifyRequest } from 'fastify';
import { AppError, badRequest, gatewayTimeout, tooLarge, unavailable } from '../../../infra/http/errors.ts';
import { checkJsonDepth } from '../../../infra/http/json-body.ts';
import { QueueFull } from '../../../infra/limits/fair-queue.ts';
import { RenderCrashed, RenderPoolClosed, RenderTimeout } from '../engines/render-job.ts';
import { normalizeSource } from '../plantuml/encoding.ts';
import type { Language } from './languages.ts';
import { EngineFailed, EngineMissing, TooLarge, Unsupported } from './renderer.ts';

const MAX_OPTIONS = 16;

/** Maps a renderer failure onto the HTTP error it is. */
export function httpOf(err: unknown): unknown {
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
export function optionsOf(req: FastifyRequest, lang: Language, json?: unknown): Record<string, string> {
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

export function hasOptionHeaders(h: Record<string, unknown>): boolean {
  for (const k in h) if (k.startsWith('kroki-diagram-options-')) return true;
  return false;
}

export function bodyText(body: unknown, maxBytes: number): string {
  if (!Buffer.isBuffer(body) || body.length === 0) throw badRequest('Request body must not be empty.');
  if (body.length > maxBytes) throw tooLarge('diagram source is too large', 'TOO_LARGE');
  return body.toString('utf8');
}

export function parseJson(text: string, depth: number): Record<string, unknown> {
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

export function unsupportedFormat(word: string, lang: Language) {
  return badRequest(
    `Unsupported output format: ${word.slice(0, 40)} for ${lang.type}. Must be one of ${lang.formats.join(', ')}.`,
    'UNSUPPORTED_FORMAT',
  );
}

/** The source a PlantUML-family language hands the JVM: ditaa in its own block, Kroki's theme option. */
export function plantumlSource(lang: Language, text: string, options: Record<string, string>): string {
  let src = text.replace(/\r\n?/g, '\n');
  if (lang.engine === 'ditaa' && !src.trimStart().startsWith('@start'))
    src = `@startditaa\n${src}\n@endditaa`;
  src = normalizeSource(src);
  const theme = options['theme'];
  if (theme && /^[\w-]{1,64}$/.test(theme))
    src = src.replace(/^(\s*@start\w*[^\n]*\n)/, `$1!theme ${theme}\n`);
  return src;
}

// AppError and the one error / not-found handler. Each route family answers in its own envelope
// (docs/protocols/public-interface.md §8); clients never see a stack, a path or a secret.
import {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type preParsingHookHandler,
} from 'fastify';
import FindMyWay, { type HTTPVersion } from 'find-my-way';
import { humanBytes } from '../config/bytes.ts';
import { redact } from '../observe/logger.ts';
import { ENVELOPES, type Envelope, type EnvelopeName } from './envelopes.ts';
import { nodeHttp } from './node-http.ts';

const { METHODS } = nodeHttp;

export interface AppErrorOptions {
  cause?: unknown;
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string | number>;
}

export class AppError extends Error {
  readonly headers: Record<string, string | number>;
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = status;
    this.name = 'AppError';
    this.headers = opts.headers ?? {};
  }
}

type O = AppErrorOptions;
export const badRequest = (msg: string, code = 'BAD_REQUEST', o?: O) => new AppError(code, 400, msg, o);
export const unauthorized = (msg: string, code = 'UNAUTHORIZED', o?: O) => new AppError(code, 401, msg, o);
export const forbidden = (msg: string, code = 'FORBIDDEN', o?: O) => new AppError(code, 403, msg, o);
export const notFound = (msg = 'not found', code = 'NOT_FOUND', o?: O) => new AppError(code, 404, msg, o);
export const conflict = (msg: string, code = 'CONFLICT', o?: O) => new AppError(code, 409, msg, o);
export const tooLarge = (msg: string, code = 'TOO_LARGE', o?: O) => new AppError(code, 413, msg, o);
export const tooMany = (msg: string, retryAfterSec: number, code = 'RATE_LIMITED', o?: O) =>
  new AppError(code, 429, msg, {
    ...o,
    headers: { ...o?.headers, 'retry-after': Math.max(1, Math.ceil(retryAfterSec)) },
  });
export const internal = (msg = 'internal error', code = 'INTERNAL', o?: O) => new AppError(code, 500, msg, o);
export const badGateway = (msg: string, code = 'BAD_GATEWAY', o?: O) => new AppError(code, 502, msg, o);
export const unavailable = (msg: string, retryAfterSec?: number, code = 'UNAVAILABLE', o?: O) =>
  new AppError(
    code,
    503,
    msg,
    retryAfterSec ? { ...o, headers: { ...o?.headers, 'retry-after': Math.ceil(retryAfterSec) } } : o,
  );
export const gatewayTimeout = (msg: string, code = 'GATEWAY_TIMEOUT', o?: O) =>
  new AppError(code, 504, msg, o);

// A failure is logged once, where the most is known about it (the proxy's exchange line knows the
// host and the upstream's error code; the error handler only knows the status). What a route decided
// about its request's failure travels on the reply itself, where the error handler and the log
// controller read it: no module-level map keyed by error objects.
/** A request's failure as its route and the error handler settled it; null until one does. */
export interface FailureState {
  /** Failures the route logged itself: not logged a second time (with a stack that says nothing). */
  logged: object[];
  /** How to answer `err` if it reaches the error handler (a stream that broke before the first byte). */
  answer: { err: object; as: AppError } | null;
  /** A refusal's code and reason, written with the request's one line (requestCompleted). */
  refusal: Record<string, unknown> | null;
}

function failureOf(reply: FastifyReply): FailureState {
  reply.failure ??= { logged: [], answer: null, refusal: null };
  return reply.failure;
}

/** Marks a failure of this reply as already logged by the route, so the error handler and the
 * stream-error logger do not log it a second time. */
export function alreadyLogged<E>(reply: FastifyReply, err: E): E {
  if (typeof err === 'object' && err !== null) failureOf(reply).logged.push(err);
  return err;
}

export function isLogged(reply: FastifyReply, err: unknown): boolean {
  return typeof err === 'object' && err !== null && reply.failure?.logged.includes(err) === true;
}

/** Tells the error handler how to answer `err` if it reaches it (status and message of `as`). */
export function answerAs<E>(reply: FastifyReply, err: E, as: AppError): E {
  if (typeof err === 'object' && err !== null) failureOf(reply).answer = { err, as };
  return err;
}

function answerFor(reply: FastifyReply, err: unknown): AppError | undefined {
  const a = reply.failure?.answer;
  return a && a.err === err ? a.as : undefined;
}

/** The error code of a library or system error (ECONNRESET, UND_ERR_SOCKET, HPE_INVALID_CHUNK_SIZE). */
function errorCode(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/**
 * True for a failure of an outbound HTTP exchange that no route turned into an AppError (undici's
 * errors, and the socket and parser errors it wraps): an upstream's fault, answered 502.
 */
function isUpstreamFault(err: unknown): boolean {
  const code = errorCode(err) ?? errorCode((err as { cause?: unknown } | null)?.cause) ?? '';
  return code.startsWith('UND_ERR_') || code.startsWith('HPE_');
}

/**
 * How a failed request is logged (docs/development.md, Errors and logs). A bug (500) or a missing part
 * (503) at error, with the stack. An upstream that failed or timed out (502, 504) at warn with its
 * cause and no stack: the stack would show devutil's code, which did nothing wrong. A refused
 * request (4xx) at info and a full store (507) at warn, without stacks: they are the client's lot,
 * not a fault to investigate.
 */
function logFailure(req: FastifyRequest, reply: FastifyReply, err: AppError): void {
  if (isLogged(reply, err)) return;
  const s = err.status;
  if (s < 500 || s === 502 || s === 504 || s === 507) {
    const cause = err.cause === undefined ? undefined : causeSummary(err.cause);
    const fields = { code: err.code, status: s, reason: err.message, ...(cause ? { cause } : {}) };
    if (s < 500) failureOf(reply).refusal = fields;
    else req.log.warn(fields, 'request failed');
    return;
  }
  req.log.error({ err, code: err.code }, 'request failed');
}

/** A cause as one short line: its code and message, never its stack. */
function causeSummary(cause: unknown): string {
  const code = errorCode(cause);
  const msg = cause instanceof Error ? cause.message : String(cause);
  return redact(`${code ? `${code}: ` : ''}${msg}`.slice(0, 300));
}

/**
 * One log line per request, written when it ends: method, URL (redacted), client, status and
 * duration, with the reqId and `svc` of every line; a refused request's line is `request refused`
 * with its code and reason. Fastify's separate "incoming request" line is kept at debug only (to
 * find a request that never ends); a client that leaves first gets `request aborted`. Below info (warn, error) nothing is built for an ordinary request;
 * a request that errored is still logged at error. A stream failure a route logged is not logged again.
 */
export class OnceLogController extends LogController {
  private readonly info: boolean;
  private readonly debug: boolean;
  constructor(infoEnabled = true, debugEnabled = false) {
    super();
    this.info = infoEnabled;
    this.debug = debugEnabled;
  }
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (this.debug) request.log.debug({ req: request }, 'incoming request');
    // A client that leaves before the answer is finished gets no completion line: log it here,
    // or the request would leave no trace at info.
    if (!this.info) return;
    let finished = false; // not writableFinished: injected requests (tests) do not set it
    reply.raw.once('finish', () => {
      finished = true;
    });
    reply.raw.once('close', () => {
      if (finished || reply.raw.errored) return;
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request aborted');
    });
  }
  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (!this.info && !error) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) {
      reply.log.error({ ...line, err: error }, 'request errored');
      return;
    }
    const refused = reply.failure?.refusal;
    if (refused) reply.log.info({ ...refused, ...line }, 'request refused');
    else reply.log.info(line, 'request completed');
  }
  override streamError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (isLogged(reply, error)) return;
    // An upstream body that broke mid-answer: its cause, not devutil's stack.
    if (isUpstreamFault(error))
      reply.log.warn({ reason: causeSummary(error) }, 'response cut: the upstream body failed');
    else super.streamError(error, request, reply);
  }
}

/** Maps URL path prefixes to envelopes; the longest matching prefix wins. */
export class EnvelopeTable {
  private rows: { prefix: string; env: Envelope; pattern: RegExp | null }[] = [];
  private fallback: Envelope;
  constructor(fallback: Envelope = ENVELOPES.v1) {
    this.fallback = fallback;
  }

  /**
   * `prefix` matches itself and anything below it: '/api/file' covers '/api/file/x'. A `:name`
   * segment matches any one segment, as in a route ('/proxy/t/:secret/npm').
   */
  mount(prefix: string, env: EnvelopeName | Envelope): void {
    const e = typeof env === 'string' ? ENVELOPES[env] : env;
    const pattern = prefix.includes('/:')
      ? new RegExp(
          `^${prefix
            .replace(/\/$/, '')
            .split('/')
            .map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
            .join('/')}(?:/|$)`,
        )
      : null;
    this.rows = this.rows.filter((r) => r.prefix !== prefix);
    this.rows.push({ prefix, env: e, pattern });
    this.rows.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  forPath(path: string): Envelope {
    for (const r of this.rows) {
      if (
        r.pattern
          ? r.pattern.test(path)
          : path === r.prefix || path.startsWith(r.prefix.endsWith('/') ? r.prefix : `${r.prefix}/`)
      )
        return r.env;
    }
    return this.fallback;
  }
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** Sends an error in the family's envelope. Safe to call from any handler or hook. */
export function sendError(
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  message: string,
  code: string,
  headers: Record<string, string | number> = {},
): FastifyReply {
  // A route whose path cannot name its family (PUT /<name> at the root) names its envelope itself.
  const named = req.routeOptions?.config?.envelope;
  const env = named
    ? typeof named === 'string'
      ? ENVELOPES[named]
      : named
    : req.server.envelopes.forPath(pathOf(req.url));
  reply.code(status);
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  reply.header('cache-control', 'no-store');
  reply.header('content-type', env.contentType);
  const body = req.method === 'HEAD' ? '' : env.body(status, message, code, headers);
  return reply.send(body);
}

/** How many of an enum's values a validation message names. */
const MAX_ALLOWED_SHOWN = 20;

/** Known framework errors with a message that is safe and useful to show. */
function frameworkMessage(err: FastifyError, req: FastifyRequest): string {
  if (err.validation) {
    const said = err.message.replace(/^(querystring|body|params|headers)\//, '$1.');
    // Ajv says "must be equal to one of the allowed values" without them: name them (from the schema).
    const allowed = err.validation.find((v) => v.keyword === 'enum')?.params['allowedValues'];
    if (!Array.isArray(allowed)) return `invalid request: ${said}`;
    const named = allowed.filter((v) => v !== '').map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
    const shown = `${named.slice(0, MAX_ALLOWED_SHOWN).join(', ')}${named.length > MAX_ALLOWED_SHOWN ? ', ...' : ''}`;
    const empty = named.length < allowed.length ? ' (or empty)' : '';
    return `invalid request: ${said.replace('must be equal to one of the allowed values', `must be one of: ${shown}${empty}`)}`;
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'malformed JSON body';
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limit = req.routeOptions?.bodyLimit;
      return `request body is too large${limit ? `: at most ${humanBytes(limit)}` : ''}`;
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'request body does not match Content-Length';
    default:
      return err.message;
  }
}

/**
 * Installs the error handler and the not-found handler, which answers 405 with Allow when the path
 * exists under another method. Call before registering routes so the route shadow table fills.
 */
export function installErrorHandling(
  app: FastifyInstance,
  notFoundHooks: { preParsing?: preParsingHookHandler } = {},
): void {
  app.decorateReply('failure', null);
  const shadow = FindMyWay<HTTPVersion.V1>({ ignoreTrailingSlash: false, caseSensitive: true });
  const seen = new Set<string>();
  app.decorate('routeList', () => [...seen]);
  app.addHook('onRoute', (opts) => {
    const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
    for (const m of methods) {
      const key = `${m} ${opts.url}`;
      if (seen.has(key) || m === 'HEAD' || !METHODS.includes(m)) continue;
      seen.add(key);
      // A route that takes any one-segment path (PUT /<name>) would make every unknown path a 405.
      if (!opts.config?.anyPath) shadow.on(m as 'GET', opts.url, () => {});
    }
  });

  // Fastify parses the body of an unmatched POST before this answers: it gets the body deadline.
  // four-oh-four.js applies every lifecycle hook in these options; its types list only two.
  app.setNotFoundHandler(notFoundHooks as Parameters<typeof app.setNotFoundHandler>[0], (req, reply) => {
    const path = pathOf(req.url);
    const allow = METHODS.filter((m) => m !== 'HEAD' && shadow.find(m as 'GET', path) !== null);
    if (allow.length) {
      if (allow.includes('GET')) allow.push('HEAD');
      return sendError(
        req,
        reply,
        405,
        `method ${req.method} not allowed; use ${allow.join(', ')}`,
        'METHOD_NOT_ALLOWED',
        {
          allow: allow.join(', '),
        },
      );
    }
    // The path is echoed back redacted: a mistyped URL may carry a bot token or a signature.
    return sendError(
      req,
      reply,
      404,
      `no such route: ${req.method} ${redact(path).slice(0, 200)}`,
      'NOT_FOUND',
    );
  });

  app.setErrorHandler((err: FastifyError | AppError, req, reply) => {
    if (reply.sent || reply.raw.headersSent) {
      if (!isLogged(reply, err))
        req.log.warn(
          isUpstreamFault(err) ? { reason: causeSummary(err) } : { err },
          'error after response started',
        );
      reply.raw.destroy();
      return;
    }
    const mapped = err instanceof AppError ? err : answerFor(reply, err);
    if (mapped) {
      if (!isLogged(reply, err)) logFailure(req, reply, mapped);
      return sendError(req, reply, mapped.status, mapped.message, mapped.code, mapped.headers);
    }
    if (isUpstreamFault(err)) {
      const e = badGateway('upstream failed', 'UPSTREAM_FAILED', { cause: err });
      logFailure(req, reply, e);
      return sendError(req, reply, 502, e.message, e.code);
    }
    const fe = err as FastifyError;
    const status =
      typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500;
    if (status === 500) {
      req.log.error({ err }, 'unhandled error');
      return sendError(req, reply, 500, 'internal error', 'INTERNAL');
    }
    const message = frameworkMessage(fe, req);
    failureOf(reply).refusal = { code: fe.code, status, reason: message };
    return sendError(req, reply, status, message, fe.code ?? 'BAD_REQUEST');
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The envelope of this route's errors, when no path prefix can name it (a route at the root, or
     * one that speaks another service's protocol under a prefix of its own).
     */
    envelope?: EnvelopeName | Envelope;
    /** The route matches any one-segment path: other methods there stay 404, never 405 for it. */
    anyPath?: boolean;
  }
  interface FastifyReply {
    /** What the route and the error handler settled about this request's failure (FailureState). */
    failure: FailureState | null;
  }
  interface FastifyInstance {
    envelopes: EnvelopeTable;
    /** Every registered route as "METHOD /url/:param" (HEAD omitted), hidden ones included. */
    routeList(): string[];
  }
}

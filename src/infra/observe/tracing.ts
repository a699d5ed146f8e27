// OpenTelemetry traces, off by default (docs/observability.md#traces). With a collector URL set,
// each HTTP request gets a server span (named by its route template, parent taken from the
// caller's W3C traceparent) and the work done for it gets child spans: outbound requests
// (infra/egress, which also sends traceparent upstream), diagram renders and blob store
// operations. The SDK and exporter are optional dependencies, imported only when tracing is on;
// with it off every helper here is one branch on a module flag and a plain call.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { missingMessage } from '../config/extras.ts';
import { redact } from './redact.ts';

/** The tracing section of the config (config-sections.ts) as this module reads it. */
export interface TracingConfig {
  readonly endpoint: string;
  readonly tracesEndpoint: string;
  readonly protocol: 'http/protobuf' | 'http/json';
  readonly headers: string;
  readonly serviceName: string;
  readonly sampler: string;
  readonly samplerArg: string;
  readonly scheduleDelayMs: number;
  readonly exportTimeoutMs: number;
}
type Attrs = Record<string, string | number | boolean | undefined>;
type Api = typeof import('@opentelemetry/api');

interface Active {
  api: Api;
  tracer: Tracer;
  span: Span;
}

const store = new AsyncLocalStorage<Active>();
/** Tracers on in this process: while 0, no helper below looks any further. */
let live = 0;

/** The span of a child operation, for what is known only at its end. */
export interface ChildSpan {
  /** The W3C traceparent naming this span, for the request it makes. */
  readonly traceparent: string;
  set(attrs: Attrs): void;
  /** Marks the span failed with the error's (redacted) message. */
  fail(err: unknown): void;
  end(): void;
}

/** True when the current request is traced (a span may be started under it). */
export function tracingActive(): boolean {
  return live > 0 && store.getStore() !== undefined;
}

const clean = (attrs: Attrs): Attributes => {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
};

function child(
  cur: Active,
  name: string,
  attrs: Attrs,
  client: boolean,
): { span: ChildSpan; active: Active } {
  const { api, tracer } = cur;
  const parent = api.trace.setSpan(api.ROOT_CONTEXT, cur.span);
  const kind = client ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL;
  const span = tracer.startSpan(name, { kind, attributes: clean(attrs) }, parent);
  const sc = span.spanContext();
  const flags = (sc.traceFlags & 1).toString(16).padStart(2, '0');
  let ended = false;
  return {
    active: { api, tracer, span },
    span: {
      traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}`,
      set: (a) => span.setAttributes(clean(a)),
      fail(err) {
        const message = redact(err instanceof Error ? err.message : String(err)).slice(0, 500);
        span.setAttribute('error.type', (err as { code?: unknown })?.code?.toString() ?? errName(err));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      },
      end() {
        if (ended) return;
        ended = true;
        span.end();
      },
    },
  };
}

const errName = (err: unknown) => (err instanceof Error ? err.name : typeof err);

/**
 * Starts a child span of the current request's span for an operation whose end the caller marks
 * (a streamed response); undefined when the request is not traced.
 */
export function startSpan(
  name: string,
  attrs: Attrs,
  kind: 'client' | 'internal' = 'internal',
): ChildSpan | undefined {
  if (live === 0) return undefined;
  const cur = store.getStore();
  return cur ? child(cur, name, attrs, kind === 'client').span : undefined;
}

/**
 * Runs `fn` in a child span of the current request's span (spans it starts nest under this one);
 * the span ends when `fn` settles, failed if it throws. Without tracing: `fn(undefined)`.
 */
export function inSpan<T>(name: string, attrs: Attrs, fn: (span?: ChildSpan) => Promise<T>): Promise<T> {
  if (live === 0) return fn();
  const cur = store.getStore();
  if (!cur) return fn();
  const { span, active } = child(cur, name, attrs, false);
  return store.run(active, () =>
    fn(span).then(
      (v) => {
        span.end();
        return v;
      },
      (err: unknown) => {
        span.fail(err);
        span.end();
        throw err;
      },
    ),
  );
}

const SERVER_SPAN = Symbol('devutil.span');
type Traced = IncomingMessage & { [SERVER_SPAN]?: Span };

/** What the onResponse hook knows that the raw request does not. */
export interface RouteFacts {
  route: string | undefined;
  clientIp: string;
  svc: string;
}

/** Tracing turned on: the SDK loaded, an exporter built. */
export class Tracing {
  private readonly api: Api;
  private readonly tracer: Tracer;
  private readonly provider: { shutdown(): Promise<void>; forceFlush(): Promise<void> };
  private readonly extract: (headers: IncomingMessage['headers']) => ReturnType<Api['context']['active']>;

  private constructor(api: Api, tracer: Tracer, provider: Tracing['provider'], extract: Tracing['extract']) {
    this.api = api;
    this.tracer = tracer;
    this.provider = provider;
    this.extract = extract;
  }

  /**
   * Null when no collector is configured. Loads the SDK; a configured collector without the
   * optional packages installed stops start-up with what to install.
   */
  static async start(cfg: TracingConfig, version: string, logger: Logger): Promise<Tracing | null> {
    const url = cfg.tracesEndpoint || (cfg.endpoint ? `${cfg.endpoint}/v1/traces` : '');
    if (!url) return null;
    const json = cfg.protocol === 'http/json';
    const exporterPkg = json
      ? '@opentelemetry/exporter-trace-otlp-http'
      : '@opentelemetry/exporter-trace-otlp-proto';
    let mods: [
      Api,
      typeof import('@opentelemetry/core'),
      typeof import('@opentelemetry/resources'),
      typeof import('@opentelemetry/sdk-trace'),
      typeof import('@opentelemetry/exporter-trace-otlp-http'),
    ];
    try {
      mods = await Promise.all([
        import('@opentelemetry/api'),
        import('@opentelemetry/core'),
        import('@opentelemetry/resources'),
        import('@opentelemetry/sdk-trace'),
        import(exporterPkg) as Promise<typeof import('@opentelemetry/exporter-trace-otlp-http')>,
      ]);
    } catch (err) {
      throw new Error(`tracing is configured (${redact(url)}) but ${missingMessage('tracing')}`, {
        cause: err,
      });
    }
    const [api, core, resources, sdk, exp] = mods;
    const exporter = new exp.OTLPTraceExporter({
      url,
      headers: parseHeaders(cfg.headers),
      timeoutMillis: cfg.exportTimeoutMs,
    });
    const provider = new sdk.TracerProvider({
      resource: resources.resourceFromAttributes({
        'service.name': cfg.serviceName,
        'service.version': version,
      }),
      sampler: sampler(sdk, cfg),
      spanProcessors: [
        new sdk.BatchSpanProcessor({
          exporter,
          scheduledDelayMillis: cfg.scheduleDelayMs,
          exportTimeoutMillis: cfg.exportTimeoutMs,
        }),
      ],
    });
    const propagator = new core.W3CTraceContextPropagator();
    const extract = (headers: IncomingMessage['headers']) =>
      propagator.extract(api.ROOT_CONTEXT, headers, api.defaultTextMapGetter);
    logger.info({ url: redact(url), protocol: cfg.protocol, sampler: cfg.sampler }, 'tracing on');
    live++;
    return new Tracing(api, provider.getTracer('devutil', version), provider, extract);
  }

  /**
   * Wraps the server's request listeners so each request runs inside its server span (set before
   * Fastify sees the request, so every hook and handler inherits it). Call before listen.
   */
  instrument(server: Server): void {
    const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    server.removeAllListeners('request');
    for (const l of listeners) server.on('request', (req, res) => this.serve(req, res, l));
  }

  private serve(req: Traced, res: ServerResponse, next: (req: IncomingMessage, res: ServerResponse) => void) {
    const { api } = this;
    const method = req.method ?? 'GET';
    // No sampler here reads attributes: a span the sampler drops (always_off, a caller's "not
    // sampled") costs no redaction or attribute work, only the context its children propagate.
    const span = this.tracer.startSpan(method, { kind: api.SpanKind.SERVER }, this.extract(req.headers));
    if (span.isRecording()) {
      const [path = '/', query] = (req.url ?? '/').split('?', 2);
      span.setAttributes(
        clean({
          'http.request.method': method,
          'url.path': redact(path),
          'url.query': query === undefined ? undefined : redact(query),
          'url.scheme': 'encrypted' in req.socket ? 'https' : 'http',
          'server.address': req.headers.host?.replace(/:\d+$/, ''),
          'network.protocol.version': req.httpVersion,
          'user_agent.original': req.headers['user-agent'],
        }),
      );
      req[SERVER_SPAN] = span;
      res.once('close', () => {
        const status = res.statusCode;
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
        if (!res.writableFinished) span.setAttribute('devutil.aborted', true);
        span.end();
      });
    }
    store.run({ api, tracer: this.tracer, span }, next, req, res);
  }

  /** From the onResponse hook: the route template names the span (HTTP semantic conventions). */
  routed(raw: IncomingMessage, facts: RouteFacts): void {
    const span = (raw as Traced)[SERVER_SPAN];
    if (!span) return;
    if (facts.route) {
      span.updateName(`${raw.method} ${facts.route}`);
      span.setAttribute('http.route', facts.route);
    }
    span.setAttributes({ 'client.address': facts.clientIp, 'devutil.svc': facts.svc });
  }

  /** Exports what is buffered (tests). */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** Exports what is buffered and stops. */
  async close(): Promise<void> {
    live--;
    await this.provider.shutdown();
  }
}

/** OTEL_EXPORTER_OTLP_HEADERS: `name=value,...`, values percent-encoded (the OTel spec's format). */
export function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim().toLowerCase();
    const raw = part.slice(i + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      value = raw;
    }
    out[name] = value;
  }
  return out;
}

function sampler(sdk: typeof import('@opentelemetry/sdk-trace'), cfg: TracingConfig) {
  const ratio = cfg.samplerArg.trim() === '' ? 1 : Number(cfg.samplerArg);
  const parentBased = (root: Sampler) => new sdk.ParentBasedSampler({ root });
  switch (cfg.sampler) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return parentBased(new sdk.AlwaysOffSampler());
    case 'parentbased_traceidratio':
      return parentBased(new sdk.TraceIdRatioBasedSampler(ratio));
    default:
      return parentBased(new sdk.AlwaysOnSampler());
  }
}

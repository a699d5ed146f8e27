// buildServer: composes infra and the enabled services into one Fastify instance, ready but not
// listening (tests drive it with inject(); main.ts listens).
import { mkdirSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type Config, configSecrets } from './config.ts';
import type { PublicUrls, ServiceContext } from './context.ts';
import { addressGroup, type ClientIpOptions, clientIp, trustList } from './infra/http/client-ip.ts';
import { Drain } from './infra/http/drain.ts';
import { EnvelopeTable, installErrorHandling, OnceLogController } from './infra/http/errors.ts';
import { FastLane } from './infra/http/fast-lane.ts';
import { hostRewriter, hostRoutes, publicUrls } from './infra/http/hosts.ts';
import { installJsonParser } from './infra/http/json-body.ts';
import { openapiOptions } from './infra/http/openapi.ts';
import { lazySwagger } from './infra/http/openapi-lazy.ts';
import { pipelineGate } from './infra/http/pipelining.ts';
import { bodyDeadline, lingerUnreadBody } from './infra/http/request-bodies.ts';
import { type RequestIds, requestIds } from './infra/http/request-id.ts';
import { sharedCompilers } from './infra/http/schema-compilers.ts';
import { ConnectionBudget, connectionMetrics, derivedTotal, fdLimit } from './infra/limits/conn-budget.ts';
import { lazyChildFactory } from './infra/observe/lazy-logger.ts';
import { createLogger, protectSecrets } from './infra/observe/logger.ts';
import { socketBytes } from './infra/observe/usage/usage.ts';
import { opsPlugin } from './ops.ts';
import { Prelaunched } from './prelaunch.ts';
import { closeInfra, type Infra, openInfra } from './server-infra.ts';
import { isEnabled, type LocalKey, type ServiceDef } from './services/define.ts';
import { SERVICES } from './services/index.ts';
import { VERSION } from './version.ts';

export { VERSION };

export interface BuildOptions {
  config: Config;
  /** A pino logger; default: one at the configured level writing to stdout. */
  logger?: Logger;
  /** An existing Redis connection to share (tests); default: connect when redis.url or redis.sentinels is set. */
  redis?: Redis | null;
  /** Extra plugins registered after the services (embedders, test fixtures). */
  plugins?: FastifyPluginAsync<ServiceContext>[];
  /** The utility definitions (default: services/index.ts); their sections must be in `config`. */
  services?: readonly ServiceDef[];
  /** What the utilities' prelaunches started (prelaunch.ts); the plugins take theirs from ctx. */
  prelaunched?: Prelaunched;
  /** The clock behind day-long rules (ctx.now); default Date.now. */
  now?: () => number;
}

/** ctx.local: each key's state made once per server, on first use. */
function localState(): ServiceContext['local'] {
  const made = new Map<LocalKey<unknown>, unknown>();
  return <T>(key: LocalKey<T>): T => {
    if (!made.has(key)) made.set(key, key.make());
    return made.get(key) as T;
  };
}

type ChildFactory = Parameters<FastifyInstance['setChildLoggerFactory']>[0];

/** How long a refused request's unread body is drained before the connection is cut. */
const LINGER_MS = 2000;

/**
 * The server in named steps, in the order they must run: the infra exists before the Fastify
 * instance that carries it, the hooks before any route is added, the plugins last.
 */
export async function buildServer(opts: BuildOptions): Promise<FastifyInstance> {
  const base = basics(opts);
  const infra = await openInfra(base.config, base.logger, base.dataDir, opts.redis);
  const { app, net } = createApp(base, infra);
  // onClose hooks run last-added first: this one, added before any other, runs after every one of
  // them, so what they log while closing is still masked.
  app.addHook('onClose', base.releaseSecrets);
  const ctx = serviceContext(app, base, infra, net, opts);
  const deadline = installHooks(app, ctx, infra, net);
  app.addHook('onClose', () => closeInfra(infra));
  await registerPlugins(app, ctx, deadline, opts.plugins ?? []);
  await whenReady(app, infra.broadcast, base.logger);
  return app;
}

/** Config and logging: the secrets masked in logs, the logger, the data directory made. */
interface Basics {
  config: Config;
  services: readonly ServiceDef[];
  logger: Logger;
  dataDir: string;
  /** Ends the masking of this server's configured secrets (other servers in the process keep theirs). */
  releaseSecrets: () => void;
}

function basics(opts: BuildOptions): Basics {
  const { config } = opts;
  const services = opts.services ?? SERVICES;
  const releaseSecrets = protectSecrets(configSecrets(config, services));
  const logger = opts.logger ?? createLogger(config.log.level, undefined, config.log.format);
  const dataDir = resolve(config.server.dataDir);
  mkdirSync(dataDir, { recursive: true });
  return { config, services, logger, dataDir, releaseSecrets };
}

/** What the request hooks and the fast lane share about callers and connections. */
interface Net {
  ids: RequestIds;
  ipOpts: ClientIpOptions;
  v6Bits: number;
  drain: Drain;
  lane: FastLane;
  connections: ConnectionBudget;
}

/** The Fastify instance and its node:http server: fast lane, tracing, drain, connection budget. */
function createApp({ config, services, logger }: Basics, infra: Infra): { app: FastifyInstance; net: Net } {
  const hosted = hostRoutes(config, services);
  const rewrite = hostRewriter(hosted);
  const trusted = trustList(config.server.trustProxy);

  const ids = requestIds();
  const app = Fastify({
    childLoggerFactory: lazyChildFactory() as ChildFactory,
    loggerInstance: logger as FastifyBaseLogger,
    logController: new OnceLogController(logger.isLevelEnabled('info'), logger.isLevelEnabled('debug')),
    trustProxy: false, // infra/http/client-ip.ts does the trusted-proxy walk (and Forwarded)
    bodyLimit: config.server.bodyLimit,
    requestTimeout: config.server.requestTimeoutMs,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    routerOptions: { maxParamLength: 65_536 }, // PlantUML sources travel encoded in one path segment
    connectionTimeout: config.server.idleTimeoutMs,
    // Header and whole-request deadlines are checked on this interval (Node's default is 30s, too
    // coarse to stop slowloris clients promptly).
    http: { maxHeaderSize: 32 * 1024, connectionsCheckingInterval: 1000 },
    // Requests that reach a closing server are served, not refused with 503: the drain (main.ts)
    // has answered with `Connection: close` since the signal, so only an answer already streaming
    // then can have a request behind it, and refusing that one would fail it.
    return503OnClosing: false,
    schemaController: sharedCompilers,
    genReqId: (req) => ids(req.headers['x-request-id']),
    // Only when a utility has its own host name: otherwise every request would pay for a no-op.
    ...(hosted.length
      ? { rewriteUrl: (req: IncomingMessage) => rewrite(req.headers.host, req.url ?? '/') }
      : {}),
  });
  app.server.headersTimeout = config.server.headersTimeoutMs;
  const drain = new Drain();
  const ipOpts = { trusted, header: config.server.forwardedHeader };
  const v6Bits = config.server.clientIpv6Prefix;
  const lane = new FastLane({
    limiter: infra.limiter,
    http: infra.metrics.http,
    usage: infra.usage,
    tracing: infra.tracing,
    drain,
    logger,
    ids,
    ip: ipOpts,
    v6Bits,
    rewrite: hosted.length ? rewrite : null,
  });
  // Before tracing wraps the request listeners, so a lane answer has its span too.
  if (config.server.fastLane) lane.install(app.server);
  infra.tracing?.instrument(app.server);
  drain.track(app.server);
  // One budget for every listener of this process (the relay takes it from ctx): fds are per process.
  const connections = new ConnectionBudget({
    total: config.server.maxConnections || derivedTotal(fdLimit()),
    perClient: config.server.maxConnectionsPerClient,
    exempt: trusted,
    v6Bits: config.server.clientIpv6Prefix,
  });
  connections.guard(app.server, 'http');
  connectionMetrics(infra.metrics, connections, ['http', 'relay']);
  return { app, net: { ids, ipOpts, v6Bits, drain, lane, connections } };
}

/** ctx, what every plugin receives, decorated on the instance with the request decorations. */
function serviceContext(
  app: FastifyInstance,
  { config, services, logger, dataDir }: Basics,
  infra: Infra,
  net: Net,
  opts: BuildOptions,
): ServiceContext {
  const ctx: ServiceContext = {
    config,
    // Every hosted utility of the definitions has its URL (publicUrls makes one per host).
    urls: publicUrls(config, services) as PublicUrls,
    limiter: infra.limiter,
    metrics: infra.metrics,
    connections: net.connections,
    readiness: infra.readiness,
    drain: net.drain,
    redis: infra.redis,
    state: infra.state,
    broadcast: infra.broadcast,
    dataDir,
    blobs: infra.blobs,
    logger,
    now: opts.now ?? Date.now,
    version: VERSION,
    services,
    local: localState(),
    usage: infra.usage,
    lane: net.lane,
    prelaunched: opts.prelaunched ?? new Prelaunched(),
  };
  app.decorate('ctx', ctx);
  // A prelaunched handle no plugin took (its utility not registered here) must not outlive the server.
  app.addHook('onClose', () => ctx.prelaunched.close());
  app.decorate('envelopes', new EnvelopeTable());
  app.decorateRequest('clientIp', '');
  app.decorateRequest('clientKey', '');
  app.decorateRequest('usageSubjects', null);
  return ctx;
}

/** The request hooks every route has; returns the body deadline (the not-found handler takes it too). */
function installHooks(app: FastifyInstance, ctx: ServiceContext, infra: Infra, net: Net) {
  const { config } = ctx;
  const { drain, ipOpts, v6Bits, lane } = net;
  const { metrics, tracing, usage } = infra;
  // First of all: a pipelined request waits for its turn before anything works for it.
  app.addHook('onRequest', pipelineGate(config.server.maxPipelined));
  // Callback-style hooks: they run on every request, and a promise each is measurable (bench/ip.ts).
  app.addHook('onRequest', (req, reply, done) => {
    req.clientIp = clientIp(req.raw.socket.remoteAddress, req.headers, ipOpts);
    req.clientKey = addressGroup(req.clientIp, v6Bits);
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
    if (drain.draining) reply.header('connection', 'close');
    done();
  });
  // Fastify reads no body for GET and HEAD, so the body deadline is attached, once when a route is
  // added, to the routes that take bodies (and the not-found handler): the rest skip the hook.
  const deadline = bodyDeadline(config.server.bodyTimeoutMs);
  app.addHook('onRoute', (route) => {
    if (route.config?.largeBody || [route.method].flat().every((m) => /^(GET|HEAD)$/i.test(m))) return;
    route.preParsing = [deadline, ...[route.preParsing ?? []].flat()];
  });
  // One onResponse hook for everything counted or cleaned up after an answer.
  app.addHook('onResponse', (req, reply, done) => {
    lingerUnreadBody(req, reply, LINGER_MS);
    // routeOptions is a getter that builds an object: read it once.
    const route = req.routeOptions.config;
    const svc = route.svc ?? 'core';
    const status = reply.statusCode;
    metrics.http.record(svc, route.url ?? 'unmatched', req.method, status, reply.elapsedTime / 1000);
    tracing?.routed(req.raw, { route: route.url, clientIp: req.clientIp, svc });
    lane.capture(req, reply, svc, route.url);
    if (usage) {
      const b = socketBytes(req.raw.socket);
      usage.record(svc, req.clientIp, status, b.bytesIn, b.bytesOut, req.usageSubjects);
    }
    done();
  });
  return deadline;
}

/** Error handling and body parsing, then the OpenAPI document, ops, every enabled utility, extras. */
async function registerPlugins(
  app: FastifyInstance,
  ctx: ServiceContext,
  deadline: ReturnType<typeof bodyDeadline>,
  extra: FastifyPluginAsync<ServiceContext>[],
): Promise<void> {
  const { config, services } = ctx;
  installErrorHandling(app, { preParsing: deadline });
  installJsonParser(app, config.server.jsonMaxDepth);
  await app.register(lazySwagger(openapiOptions(ctx.urls, VERSION)));
  await app.register(opsPlugin, ctx);

  for (const svc of services) {
    if (!isEnabled(config, svc)) continue;
    const plugin = (await svc.plugin()).default;
    await app.register(async (scope) => {
      // Tag every route of the service so logs and metrics carry `svc`.
      scope.addHook('onRoute', (route) => {
        route.config = { ...(route.config as object), svc: svc.name };
      });
      // The per-request child logger carries `svc` and is built only when something is logged.
      scope.setChildLoggerFactory(lazyChildFactory({ svc: svc.name }) as ChildFactory);
      await scope.register(plugin, ctx);
    });
  }
  for (const plugin of extra) await app.register(plugin, ctx);
}

async function whenReady(app: FastifyInstance, broadcast: Infra['broadcast'], logger: Logger): Promise<void> {
  // Listening before the invalidation subscriptions are active would miss the first changes.
  if (!(await broadcast.ready(3000))) logger.warn('redis pub/sub not subscribed yet; continuing');
  await app.ready();
}

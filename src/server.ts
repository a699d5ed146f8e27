// buildServer: composes infra and the enabled services into one Fastify instance, ready but not
// listening (tests drive it with inject(); main.ts listens).
import { mkdirSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type Config, configSecrets } from './config.ts';
import type { PublicUrls, ServiceContext } from './context.ts';
import { addressGroup, clientIp, trustList } from './infra/http/client-ip.ts';
import { Drain } from './infra/http/drain.ts';
import { EnvelopeTable, installErrorHandling, OnceLogController } from './infra/http/errors.ts';
import { FastLane } from './infra/http/fast-lane.ts';
import { hostRewriter, hostRoutes, publicUrls } from './infra/http/hosts.ts';
import { installJsonParser } from './infra/http/json-body.ts';
import { openapiOptions } from './infra/http/openapi.ts';
import { pipelineGate } from './infra/http/pipelining.ts';
import { bodyDeadline, lingerUnreadBody } from './infra/http/request-bodies.ts';
import { requestIds } from './infra/http/request-id.ts';
import { sharedCompilers } from './infra/http/schema-compilers.ts';
import { ConnectionBudget, connectionMetrics, derivedTotal, fdLimit } from './infra/limits/conn-budget.ts';
import { RateLimiter } from './infra/limits/rate-limit.ts';
import { lazyChildFactory } from './infra/observe/lazy-logger.ts';
import { createLogger, protectSecrets } from './infra/observe/logger.ts';
import { Metrics } from './infra/observe/metrics.ts';
import { Readiness } from './infra/observe/readiness.ts';
import { Tracing } from './infra/observe/tracing.ts';
import { StateSink } from './infra/observe/usage/sink.ts';
import { socketBytes, UsageRecorder } from './infra/observe/usage/usage.ts';
import { createBroadcast } from './infra/state/broadcast.ts';
import { connectRedis, redisConfigured } from './infra/state/redis.ts';
import { createState } from './infra/state/state.ts';
import { createBlobStore, incompleteUploadAgeMs } from './infra/storage/blob-store.ts';
import { tracedBlobs } from './infra/storage/traced.ts';
import { opsPlugin } from './ops.ts';
import { Prelaunched } from './prelaunch.ts';
import { adminEnabled } from './services/admin/config.ts';
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

export async function buildServer(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const services = opts.services ?? SERVICES;
  protectSecrets(configSecrets(config, services));
  const logger = opts.logger ?? createLogger(config.log.level, undefined, config.log.format);
  const dataDir = resolve(config.server.dataDir);
  mkdirSync(dataDir, { recursive: true });

  // Off unless a collector is configured; then the SDK is loaded here, before anything is traced.
  const tracing = await Tracing.start(config.tracing, VERSION, logger);

  const ownRedis = opts.redis === undefined && redisConfigured(config.redis);
  const redis =
    opts.redis !== undefined ? opts.redis : ownRedis ? await connectRedis(config.redis, logger) : null;
  const state = await createState(redis, config.redis.keyPrefix);
  const metrics = new Metrics();
  const limiterErrors = metrics.counter('devutil_ratelimit_store_errors_total', 'rate limit store failures', [
    'mode',
  ]);
  const limiter = new RateLimiter(state, {
    failMode: config.redis.failMode,
    logger,
    onStoreError: () => limiterErrors.inc({ mode: config.redis.failMode }),
  });
  const broadcast = createBroadcast(redis, config.redis.keyPrefix, logger);
  const readiness = new Readiness();
  // Without Redis the files quota and Max-Downloads refuse rather than count wrong; rate limits and
  // byte budgets let requests through unless they fail closed, which then refuses everything limited.
  if (redis)
    readiness.add(
      'redis',
      async () => ({ ok: (await redis.ping()) === 'PONG' }),
      config.redis.failMode === 'closed' ? 'all' : ['files'],
    );
  const abortAfter = config.storage.s3AbortIncompleteAfterSec * 1000;
  if (config.storage.backend === 's3' && abortAfter > 0 && abortAfter <= config.server.requestTimeoutMs)
    logger.warn(
      { abortAfterSec: abortAfter / 1000, requestTimeoutMs: config.server.requestTimeoutMs },
      'storage.s3AbortIncompleteAfterSec is not longer than a request may run: an upload still in flight on another node may be aborted',
    );
  const store = await createBlobStore({
    ...config.storage,
    dataDir,
    s3IncompleteUploadAgeMs: incompleteUploadAgeMs({
      explicitSec: config.storage.s3AbortIncompleteAfterSec,
      requestTimeoutMs: config.server.requestTimeoutMs,
      uploadExpirySec: config.files.uploadExpirySec,
    }),
    logger: logger.child({ svc: 'storage' }),
  });
  const blobs = tracing ? tracedBlobs(store) : store;
  // Stored files, uploaded avatars (generated ones need no store) and Telegram recipient tokens.
  readiness.add('blobs', () => blobs.ping().then(() => ({ ok: true })), ['files', 'avatar', 'telegram']);

  // Counted only when the admin dashboard is on; with Redis every instance adds to the same buckets.
  const adminCfg = adminEnabled(config) ? config.admin : null;
  const usage = adminCfg
    ? new UsageRecorder({
        sink: new StateSink(state, adminCfg.topEntries),
        capacity: adminCfg.topEntries,
        flushMs: adminCfg.flushIntervalMs,
        logger,
      })
    : null;

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
    limiter,
    http: metrics.http,
    usage,
    tracing,
    drain,
    logger,
    ids,
    ip: ipOpts,
    v6Bits,
    rewrite: hosted.length ? rewrite : null,
  });
  // Before tracing wraps the request listeners, so a lane answer has its span too.
  if (config.server.fastLane) lane.install(app.server);
  tracing?.instrument(app.server);
  drain.track(app.server);
  // One budget for every listener of this process (the relay takes it from ctx): fds are per process.
  const connections = new ConnectionBudget({
    total: config.server.maxConnections || derivedTotal(fdLimit()),
    perClient: config.server.maxConnectionsPerClient,
    exempt: trusted,
    v6Bits: config.server.clientIpv6Prefix,
  });
  connections.guard(app.server, 'http');
  connectionMetrics(metrics, connections, ['http', 'relay']);

  const ctx: ServiceContext = {
    config,
    // Every hosted utility of the definitions has its URL (publicUrls makes one per host).
    urls: publicUrls(config, services) as PublicUrls,
    limiter,
    metrics,
    connections,
    readiness,
    drain,
    redis,
    state,
    broadcast,
    dataDir,
    blobs,
    logger,
    now: opts.now ?? Date.now,
    version: VERSION,
    services,
    local: localState(),
    usage,
    lane,
    prelaunched: opts.prelaunched ?? new Prelaunched(),
  };
  app.decorate('ctx', ctx);
  // A prelaunched handle no plugin took (its utility not registered here) must not outlive the server.
  app.addHook('onClose', () => ctx.prelaunched.close());
  app.decorate('envelopes', new EnvelopeTable());
  app.decorateRequest('clientIp', '');
  app.decorateRequest('clientKey', '');
  app.decorateRequest('usageSubjects', null);

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
  app.addHook('onClose', async () => {
    await usage?.close();
    await limiter.close();
    await blobs.close();
    await broadcast.close();
    await state.close();
    if (ownRedis && redis) redis.disconnect();
    await tracing?.close();
  });

  installErrorHandling(app, { preParsing: deadline });
  installJsonParser(app, config.server.jsonMaxDepth);
  await app.register(swagger, openapiOptions(ctx.urls, VERSION));
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
  for (const plugin of opts.plugins ?? []) await app.register(plugin, ctx);
  // Listening before the invalidation subscriptions are active would miss the first changes.
  if (!(await broadcast.ready(3000))) logger.warn('redis pub/sub not subscribed yet; continuing');
  await app.ready();
  return app;
}

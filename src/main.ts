// Process entry: config -> buildServer -> listen; background listeners (relay); signals -> close.
// With --workers N the primary forks N HTTP workers that share the port (node:cluster).
import cluster from 'node:cluster';
import type { FastifyInstance, FastifyListenOptions } from 'fastify';
import type { Logger } from 'pino';
import { ACTIVATED_BACKLOG, type ActivatedSocket } from './activation.ts';
import { type Background, ListenError, listenFailure, startBackground } from './background.ts';
import type { Config } from './config.ts';
import { EXTRAS, extraInstallLine, missingExtras } from './infra/config/extras.ts';
import { loadCompilers } from './infra/http/schema-compilers.ts';
import { createLogger } from './infra/observe/logger.ts';
import { startIdleCollection } from './infra/process/idle-gc.ts';
import { type Prelaunched, prelaunch, workerCount } from './prelaunch.ts';
import { type BuildOptions, buildServer } from './server.ts';

/** Options an embedder passes through to buildServer (extra plugins), and the CLI's logger. */
export type ServeOptions = Pick<BuildOptions, 'plugins'> & {
  logger?: Logger;
  /** What the CLI started before the server's modules loaded (else started here). */
  prelaunched?: Promise<Prelaunched>;
  /** A listening socket the service manager passed (systemd socket activation): used, not the port. */
  socket?: ActivatedSocket | null;
};

export { workerCount };

/** Runs the server until SIGTERM/SIGINT; resolves with the exit code. */
export async function serve(
  config: Config,
  warnings: string[] = [],
  opts: ServeOptions = {},
): Promise<number> {
  const logger = opts.logger ?? createLogger(config.log.level, undefined, config.log.format);
  for (const w of warnings) logger.warn(w);
  const n = workerCount(config.server.workers);
  if (n > 1 && cluster.isPrimary) return runPrimary(n, logger, config);
  return runWorker(config, logger, opts);
}

async function runWorker(config: Config, logger: Logger, opts: ServeOptions): Promise<number> {
  const { prelaunched, socket, ...build } = opts;
  const early = await (prelaunched ?? prelaunch(config, logger));
  const app = await buildServer({ config, logger, ...build, prelaunched: early });
  try {
    if (socket) {
      // Node listens on a passed descriptor before it looks at a port or host (the host only keeps
      // Fastify from binding 'localhost' twice); in a cluster worker the primary listens on it.
      await app.listen({
        fd: socket.fd,
        host: config.server.host,
        backlog: ACTIVATED_BACKLOG,
      } as FastifyListenOptions);
      logger.info(
        { fd: socket.fd, name: socket.name, worker: cluster.worker?.id },
        'listening on the socket systemd passed: restarts keep it open',
      );
    } else
      await listenWithFallback(
        (host) => app.listen({ port: config.server.port, host }),
        config.server.host,
        logger,
      );
  } catch (err) {
    const { host, port } = config.server;
    const code = (err as NodeJS.ErrnoException).code;
    if (socket)
      logger.fatal({ code, fd: socket.fd }, `cannot listen on the socket systemd passed: ${String(err)}`);
    else logger.fatal({ code }, listenFailure('', host, port, err));
    await app.close();
    return 1;
  }
  const u = app.ctx.urls;
  // Background listeners need one owner: the single process, or worker 1 in cluster mode.
  let background: Background[] = [];
  try {
    if (cluster.isPrimary || cluster.worker?.id === 1) background = await startBackground(app.ctx);
  } catch (err) {
    // A taken relay port stops start-up like a taken HTTP port: one line, exit 1.
    if (!(err instanceof ListenError)) throw err;
    logger.fatal({ code: err.code }, err.message);
    await app.close();
    return 1;
  }
  // The public URL of each utility with a host of its own, as users write it (avatars: /avatar).
  const hosted = app.ctx.services.flatMap((d) =>
    d.host ? [[d.name, `${u[d.name]}${d.host.urlsCarryMount ? d.host.mount : ''}`]] : [],
  );
  logger.info(
    { base: u.base, ...Object.fromEntries(hosted), worker: cluster.worker?.id },
    `devutil ${app.ctx.version} serving on ${u.base}`,
  );
  // The heavy extras a production install leaves out (src/infra/config/extras.ts), each with its
  // install line: looked up a while after the server listens (a dozen package lookups on disk,
  // ~10 ms of blocking work), not ahead of the first requests a start gets (health checks, the
  // requests that waited for a restart). The schema compilers' modules (Ajv, fast-json-stringify)
  // are loaded then too, unless a request has already needed them: the later first requests do
  // not wait for them.
  setTimeout(() => {
    loadCompilers();
    const missing = missingExtras();
    if (missing.length)
      logger.info(
        { extras: Object.fromEntries(missing.map((n) => [n, extraInstallLine(n)])) },
        `optional extras not installed: ${missing.map((n) => EXTRAS[n].feature).join('; ')}`,
      );
  }, EXTRAS_LOOKUP_DELAY_MS).unref();
  // The JavaScript heap a burst grew goes back once the server is idle (idle-gc.ts).
  const idleGc = startIdleCollection((r) =>
    logger.debug(
      { heapBefore: r.before, heapAfter: r.after, ms: Math.round(r.ms), cpuMs: Math.round(r.cpuMs) },
      'idle: collected the JavaScript heap',
    ),
  );
  return waitForSignal(app, background, config, logger).finally(() => idleGc.stop());
}

/** How long after listening the missing optional extras are looked up and logged. */
const EXTRAS_LOOKUP_DELAY_MS = 1000;

/** Errors of a machine (or container) without IPv6: `::` cannot be bound at all. */
const NO_IPV6 = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL']);

/**
 * Listens on `host`. The dual-stack default `::` (Node leaves IPV6_V6ONLY off, so IPv4 callers
 * are served too) falls back to `0.0.0.0` where IPv6 is missing, and says so once.
 */
export async function listenWithFallback(
  listen: (host: string) => Promise<unknown>,
  host: string,
  logger: Pick<Logger, 'warn'>,
): Promise<string> {
  try {
    await listen(host);
    return host;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (host !== '::' || !NO_IPV6.has(code)) throw err;
    logger.warn({ code }, 'IPv6 is not available here: listening on 0.0.0.0 (IPv4 only)');
    await listen('0.0.0.0');
    return '0.0.0.0';
  }
}

function waitForSignal(
  app: FastifyInstance,
  background: Background[],
  config: Config,
  logger: Logger,
): Promise<number> {
  return new Promise((resolve) => {
    let closing = false;
    let skipDrain: (() => void) | undefined;
    const { drain } = app.ctx;
    const stop = async (signal: string) => {
      if (closing) {
        // A second signal: stop draining now (an operator who means it).
        skipDrain?.();
        return;
      }
      closing = true;
      const timeoutMs = config.server.shutdownTimeoutMs;
      // The deadline counts from the signal: an orchestrator's grace period (Kubernetes'
      // terminationGracePeriodSeconds, docker stop -t) is set against this one number.
      const timer = setTimeout(() => {
        const { open, busy } = drain.counts();
        logger.warn(
          { timeoutMs, open, busy },
          'shutdown deadline: cutting the connections still open (transfers in flight are lost)',
        );
        app.server.closeAllConnections();
        resolve(1);
      }, timeoutMs);
      timer.unref();
      // SIGINT is a person at a terminal: no load balancer to tell, so no drain delay.
      const delayMs = signal === 'SIGINT' ? 0 : Math.min(config.server.drainDelayMs, timeoutMs);
      const switched = drain.begin();
      if (delayMs > 0) {
        logger.info(
          { signal, drainDelayMs: delayMs, inFlight: drain.counts().busy, switched },
          'draining: /readyz answers 503, requests are still served and their connections closed',
        );
        await new Promise<void>((r) => {
          const t = setTimeout(r, delayMs);
          skipDrain = () => {
            clearTimeout(t);
            r();
          };
        });
      }
      logger.info({ signal, inFlight: drain.counts().busy }, 'shutting down: finishing in-flight requests');
      try {
        await Promise.all([app.close(), ...background.map((b) => b.close())]);
        clearTimeout(timer);
        logger.info('shut down cleanly');
        resolve(0);
      } catch (err) {
        logger.error({ err }, 'error during shutdown');
        resolve(1);
      }
    };
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.on('SIGINT', () => void stop('SIGINT'));
    if (cluster.isWorker) process.once('disconnect', () => void stop('disconnect'));
  });
}

function runPrimary(n: number, logger: Logger, config: Config): Promise<number> {
  logger.info({ workers: n }, 'starting worker processes');
  let stopping = false;
  const restarts: number[] = [];
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error({ worker: worker.id, code, signal }, 'worker exited; starting a replacement');
    const now = Date.now();
    restarts.push(now);
    while (restarts.length && (restarts[0] ?? now) < now - 60_000) restarts.shift();
    // A worker that dies at once every time (bad config, port in use) must not spin forever.
    if (restarts.length > 5 * n) {
      logger.fatal('workers keep crashing; giving up');
      process.exit(1);
    }
    setTimeout(() => cluster.fork(), 200);
  });
  for (let i = 0; i < n; i++) cluster.fork();
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'stopping workers');
      const workers = Object.values(cluster.workers ?? {});
      let left = workers.length;
      if (left === 0) resolve(0);
      const timer = setTimeout(() => {
        for (const w of workers) w?.process.kill('SIGKILL');
        resolve(1);
      }, config.server.shutdownTimeoutMs + 2000);
      timer.unref();
      for (const w of workers) {
        w?.once('exit', () => {
          if (--left === 0) {
            clearTimeout(timer);
            resolve(0);
          }
        });
        w?.process.kill('SIGTERM');
      }
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

// Builds or starts the real devutil composition for tests, with a temporary data directory and
// optional captured logs (to prove secrets never reach them).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import pino, { type DestinationStream } from 'pino';
import { type Config, type ConfigSources, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/infra/observe/logger.ts';
import { type BlobStore, createBlobStore } from '../../src/infra/storage/blob-store.ts';
import { buildServer } from '../../src/server.ts';
import type { ServiceDef } from '../../src/services/define.ts';
import { freePort } from './ports.ts';

export type Overrides = NonNullable<ConfigSources['overrides']>;

// Every test server logs at debug level into test-output/logs/<pid>.log; after the whole run,
// scripts/scan-logs.js greps those files for registered test secrets and secret-shaped strings.
const RUN_LOG_DIR = join(
  process.env['DEVUTIL_TEST_OUTPUT'] ?? join(new URL('../..', import.meta.url).pathname, 'test-output'),
  'logs',
);
let runLog: DestinationStream | undefined;
function runLogStream(): DestinationStream {
  // Synchronous writes: the runner may end a test process without waiting for pending buffers.
  runLog ??= pino.destination({ dest: join(RUN_LOG_DIR, `${process.pid}.log`), sync: true, mkdir: true });
  return runLog;
}

/** Every log line written by servers built with `logs` (shared across a test file). */
export class LogCapture {
  readonly lines: string[] = [];
  readonly stream = new Writable({
    write: (chunk, _enc, cb) => {
      this.lines.push(...String(chunk).split('\n').filter(Boolean));
      runLogStream().write(String(chunk));
      cb();
    },
  });
  text(): string {
    return this.lines.join('\n');
  }
}

const tempDirs: string[] = [];
process.on('exit', () => {
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});

/** A temporary directory removed when the test process exits. */
export function tempDir(prefix = 'devutil-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

/** A local-disk blob store in a temporary directory (removed with the others after the run). */
export function diskBlobs(): Promise<BlobStore> {
  return createBlobStore({
    backend: 'fs',
    dataDir: tempDir(),
    s3Endpoint: '',
    s3Bucket: '',
    s3Region: '',
    s3AccessKeyId: '',
    s3SecretAccessKey: '',
    s3ForcePathStyle: false,
  });
}

/**
 * The run's shared PlantUML build directory (scripts/test.js makes it): the worker compiled and its
 * class archive made once per run, not by every test server. Not for a server whose test chose its
 * data directory (it may look into it, restart on it or damage what is there), its Java or its jar
 * (a JRE without javac must find no worker built by a JDK).
 */
export function sharedDiagramsBuild(chosen: boolean, env: Record<string, string | undefined>) {
  const dir = process.env['DEVUTIL_TEST_DIAGRAMS_BUILD_DIR'];
  const envChose = [
    'DATA_DIR',
    'DIAGRAMS_BUILD_DIR',
    'DIAGRAMS_JAVA',
    'DIAGRAMS_JAR',
    'PLANTUML_JAVA',
    'PLANTUML_JAR',
  ].some((k) => env[`DEVUTIL_${k}`] !== undefined);
  return dir && !chosen && !envChose ? dir : undefined;
}

/**
 * The run's shared build directory as the variable of a `devutil serve` a test spawns with an
 * environment of its own (none outside the runner): its JVM may start, but it need not compile the
 * worker and train its class archive in its own data directory.
 */
export function sharedDiagramsBuildEnv(): Record<string, string> {
  const dir = sharedDiagramsBuild(false, {});
  return dir ? { DEVUTIL_DIAGRAMS_BUILD_DIR: dir } : {};
}

export function testConfig(
  overrides: Overrides = {},
  env: Record<string, string> = {},
  services?: readonly ServiceDef[],
): Config {
  const o: Overrides = { ...overrides };
  const d = overrides.diagrams;
  const chosen = [overrides.server?.dataDir, d?.buildDir, d?.java, d?.jar].some((v) => v !== undefined);
  const buildDir = sharedDiagramsBuild(chosen, env);
  // No JVM started with a listening server unless its test asks (as startDevutilProcess): most test
  // servers never render a diagram, and one that does starts it on its first render.
  const envPrestart = env['DEVUTIL_DIAGRAMS_PRESTART'] ?? env['DEVUTIL_PLANTUML_PRESTART'];
  const prestart = envPrestart === undefined ? { prestart: false } : {};
  o.diagrams = { ...prestart, ...(buildDir ? { buildDir } : {}), ...overrides.diagrams };
  o.server = { dataDir: tempDir(), ...overrides.server };
  o.log = { level: 'debug', ...overrides.log };
  return loadConfig({ env, overrides: o, ...(services ? { services } : {}) }).config;
}

export interface BuildTestOptions {
  overrides?: Overrides;
  env?: Record<string, string>;
  logs?: LogCapture;
  redis?: Redis | null;
  /** Utility definitions other than services/index.ts (a toy utility). */
  services?: readonly ServiceDef[];
  /** A clock the test moves (ctx.now): days pass without waiting. */
  now?: () => number;
}

export async function buildTestServer(opts: BuildTestOptions = {}): Promise<FastifyInstance> {
  const config = testConfig(opts.overrides, opts.env, opts.services);
  const logger = createLogger(config.log.level, opts.logs ? opts.logs.stream : runLogStream());
  const app = await buildServer({
    config,
    logger,
    ...(opts.redis !== undefined ? { redis: opts.redis } : {}),
    ...(opts.services ? { services: opts.services } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  });
  return app;
}

export interface Running {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the real server on a free loopback port for e2e tests with real clients. The public URL
 * defaults to http://127.0.0.1:<port> so links and rewritten redirects point at this server. */
export async function startTestServer(opts: BuildTestOptions = {}): Promise<Running> {
  // A port free when asked can be taken by a parallel test process before the listen: another one
  // (a port the test chose itself is its own business).
  for (let attempt = 1; ; attempt++) {
    const port = Number(opts.overrides?.server?.port ?? (await freePort()));
    const url = `http://127.0.0.1:${port}`;
    const server = { port, publicUrl: url, ...opts.overrides?.server };
    const app = await buildTestServer({ ...opts, overrides: { ...opts.overrides, server } });
    try {
      await app.listen({ port, host: '127.0.0.1' });
    } catch (err) {
      await app.close().catch(() => {});
      if (
        attempt < 3 &&
        !opts.overrides?.server?.port &&
        (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
      )
        continue;
      throw err;
    }
    return { app, url, port, close: () => app.close() };
  }
}

// What every service plugin receives: config, public URLs, shared limiter, metrics, readiness
// checks, the optional Redis connection and the broadcast bus on it, the absolute data directory,
// the service definitions, each utility's own per-server state and the usage recorder.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Drain } from './infra/http/drain.ts';
import type { FastLane } from './infra/http/fast-lane.ts';
import type { PublicUrlsOf } from './infra/http/hosts.ts';
import type { ConnectionBudget } from './infra/limits/conn-budget.ts';
import type { RateLimiter } from './infra/limits/rate-limit.ts';
import type { Metrics } from './infra/observe/metrics.ts';
import type { Readiness } from './infra/observe/readiness.ts';
import type { Subjects, UsageRecorder } from './infra/observe/usage/usage.ts';
import type { Broadcast } from './infra/state/broadcast.ts';
import type { SharedState } from './infra/state/state.ts';
import type { BlobStore } from './infra/storage/blob-store.ts';
import type { Prelaunched } from './prelaunch.ts';
import type { LocalKey, ServiceDef } from './services/define.ts';
import type { SERVICES } from './services/index.ts';

/** Names of the utilities that may have a host of their own (from their definitions). */
type HostedName = Extract<(typeof SERVICES)[number], { host: object }>['name'];
/** The base URL and one public URL per hosted utility. */
export type PublicUrls = PublicUrlsOf<HostedName>;

export interface ServiceContext {
  config: Config;
  urls: PublicUrls;
  limiter: RateLimiter;
  metrics: Metrics;
  /** The process's connection budget; every listener admits its sockets through it. */
  connections: ConnectionBudget;
  readiness: Readiness;
  /** Set on SIGTERM: /readyz answers 503 and every answer closes its connection (main.ts). */
  drain: Drain;
  redis: Redis | null;
  /** Counters, flags, leases and reservation pools every limit is built on (Redis when configured). */
  state: SharedState;
  /** Messages to every instance (Redis pub/sub; this process alone without Redis). */
  broadcast: Broadcast;
  /** Absolute path of the data directory (created at start-up). */
  dataDir: string;
  /** The shared blob store (fs or S3, config.storage.backend); namespace keys: "files/..", "avatars/..". */
  blobs: BlobStore;
  logger: Logger;
  /** Wall-clock time in epoch ms for rules that span days (file lifetimes); tests pass their own. */
  now: () => number;
  /** The package version, e.g. 0.1.0. */
  version: string;
  /** Every utility definition this server was built with, enabled or not (services/index.ts). */
  services: readonly ServiceDef[];
  /** What the utilities' prelaunches started before the server was built; each plugin takes its own. */
  prelaunched: Prelaunched;
  /** A utility's per-server state (services/define.ts LocalKey), made on first use. */
  local<T>(key: LocalKey<T>): T;
  /** Usage counts for the admin dashboard; null when it is off (no admin token), so nothing is counted. */
  usage: UsageRecorder | null;
  /** Answers of hot GET/HEAD routes sent before the router (infra/http/fast-lane.ts). */
  lane: FastLane;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: ServiceContext;
  }
  interface FastifyRequest {
    /** The caller's address after the trusted-proxy walk (infra/http/client-ip.ts). */
    clientIp: string;
    /** The key every limit counts this caller under: clientIp, or its IPv6 network (addressGroup). */
    clientKey: string;
    /** What a proxied request was for, counted by the usage recorder (null elsewhere). */
    usageSubjects: Subjects | null;
  }
  interface FastifyContextConfig {
    svc?: string;
  }
}

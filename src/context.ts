// What every service plugin receives: config, public URLs, shared limiter, metrics, readiness
// checks, the optional Redis connection and the broadcast bus on it, the absolute data directory,
// the service definitions, each utility's own per-server state and the usage recorder.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Drain } from './infra/http/drain.ts';
import type { PublicUrls } from './infra/http/hosts.ts';
import type { ConnectionBudget } from './infra/limits/conn-budget.ts';
import type { RateLimiter } from './infra/limits/rate-limit.ts';
import type { Metrics } from './infra/observe/metrics.ts';
import type { Subjects, UsageRecorder } from './infra/observe/usage/usage.ts';
import type { Broadcast } from './infra/state/broadcast.ts';
import type { SharedState } from './infra/state/state.ts';
import type { BlobStore } from './infra/storage/blob-store.ts';
import type { Prelaunched } from './prelaunch.ts';
import type { LocalKey, ServiceDef } from './services/define.ts';

export interface ReadyResult {
  ok: boolean;
  detail?: string;
}

type Check = () => Promise<ReadyResult> | ReadyResult;

/**
 * Named dependency checks behind /readyz. A check should answer within a second or two. A failing
 * critical check (storage, Redis) makes the instance not ready; a failing optional one (a utility
 * whose engine is missing, such as Java for diagrams) only marks it degraded, so a load balancer
 * keeps sending it the traffic every other utility can serve.
 */
export class Readiness {
  private checks = new Map<string, Check>();
  private optional = new Set<string>();

  add(name: string, check: Check, opts: { critical?: boolean } = {}): void {
    this.checks.set(name, check);
    if (opts.critical === false) this.optional.add(name);
    else this.optional.delete(name);
  }

  async run(
    timeoutMs = 2000,
  ): Promise<{ ok: boolean; degraded: boolean; checks: Record<string, ReadyResult> }> {
    const entries = [...this.checks.entries()];
    const results = await Promise.all(
      entries.map(async ([name, check]): Promise<[string, ReadyResult]> => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const timeout = new Promise<ReadyResult>((resolve) => {
            timer = setTimeout(
              () => resolve({ ok: false, detail: `no answer within ${timeoutMs}ms` }),
              timeoutMs,
            );
          });
          return [name, await Promise.race([Promise.resolve(check()), timeout])];
        } catch (err) {
          return [name, { ok: false, detail: err instanceof Error ? err.message : String(err) }];
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const checks = Object.fromEntries(results);
    const failed = results.filter(([, r]) => !r.ok).map(([name]) => name);
    return {
      ok: failed.every((n) => this.optional.has(n)),
      degraded: failed.length > 0,
      checks,
    };
  }
}

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
